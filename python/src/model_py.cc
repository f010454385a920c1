// foxhunt.train / evaluate / predict and Checkpoint loading over src/train (DESIGN §5-§6).
// Each releases the GIL for the whole run; progress goes to stderr as in the CLI (the Python
// wrapper also follows RUN_DIR/metrics.jsonl into logging and an optional callback).
#include "bindings.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace fxt::python {
namespace {
// The `precision` argument ("fp32", "tf32", "bf16"), as --precision.
Precision precision_arg(const std::string& name) {
  const std::optional<Precision> p = precision_from_name(name);
  if (!p) raise(UsageError("precision must be fp32, tf32 or bf16 (got '{}')", name));
  return *p;
}
}  // namespace

void bind_model(py::module_& m) {
  m.def("_default_train_config", [] { return to_python(TrainConfig{}.to_json()); });

  m.def(
      "_train",
      [](const py::dict& config, const std::vector<std::string>& stores, const std::string& run_dir,
         bool resume, bool horizons_given, int stop_after, int threads, const std::string& device,
         const std::string& precision) {
        TrainConfig c = unwrap(TrainConfig::from_json(from_python(config)));
        c.threads = threads;
        c.device = device;
        c.precision = precision_arg(precision);
        // A resumed run takes its horizons from the checkpoint unless they are given (as fxt).
        if (resume && !horizons_given) c.horizons.clear();
        if (stop_after < 0) raise(UsageError("--stop-after must be >= 0"));
        TrainOptions o;
        o.resume = resume;
        o.stop_after_epochs = stop_after;
        Result<TrainSummary> s = InternalError("not run");
        {
          py::gil_scoped_release release;
          s = train(c, stores, run_dir, o);
        }
        const TrainSummary summary = unwrap(std::move(s));
        py::dict out;
        out["epochs_run"] = summary.epochs_run;
        out["steps"] = summary.steps;
        out["best_epoch"] = summary.best_epoch;
        out["best_value"] = summary.best_value;
        out["stopped_early"] = summary.stopped_early;
        out["run_dir"] = run_dir;
        return out;
      },
      py::arg("config"), py::arg("stores"), py::arg("run_dir"), py::arg("resume"),
      py::arg("horizons_given"), py::arg("stop_after"), py::arg("threads"), py::arg("device"),
      py::arg("precision"));

  m.def(
      "evaluate",
      [](const std::string& checkpoint, const std::vector<std::string>& stores,
         const std::string& split, const std::vector<int>& horizons, int threads, int bootstrap,
         uint64_t bootstrap_seed, const std::string& device, const std::string& precision,
         int stack_rows) {
        EvalOptions o;
        o.split = unwrap(parse_eval_split(split));
        o.expect_horizons = horizons;
        if (threads < 1) raise(UsageError("--threads must be >= 1"));
        if (bootstrap < 0) raise(UsageError("--bootstrap must be >= 0"));
        if (stack_rows < 0) raise(UsageError("--stack-rows must be >= 0"));
        o.threads = threads;
        o.stack_rows = stack_rows;
        o.bootstrap = bootstrap;
        o.bootstrap_seed = bootstrap_seed;
        o.device = device;
        o.precision = precision_arg(precision);
        Result<nlohmann::json> j = InternalError("not run");
        {
          py::gil_scoped_release release;
          j = evaluate(checkpoint, stores, o);
        }
        return to_python(unwrap(std::move(j)));
      },
      py::arg("checkpoint"), py::arg("stores") = std::vector<std::string>{},
      py::arg("split") = "test", py::arg("horizons") = std::vector<int>{}, py::arg("threads") = 1,
      py::arg("bootstrap") = 200, py::arg("bootstrap_seed") = 1, py::arg("device") = "auto",
      py::arg("precision") = "fp32", py::arg("stack_rows") = EvalOptions{}.stack_rows,
      "`fxt eval` as a dict: the same JSON `fxt eval --out` writes");

  m.def(
      "_predict",
      [](const std::string& checkpoint, const std::string& store, const std::string& out_csv,
         int threads, const std::string& device, const std::string& precision) {
        if (threads < 1) raise(UsageError("--threads must be >= 1"));
        const Precision p = precision_arg(precision);
        Status st;
        {
          py::gil_scoped_release release;
          st = predict(checkpoint, store, out_csv, threads, device, p);
        }
        check(st);
      },
      py::arg("checkpoint"), py::arg("store"), py::arg("out_csv"), py::arg("threads"),
      py::arg("device"), py::arg("precision"));

  m.def(
      "_read_checkpoint",
      [](const std::string& path) {
        Result<Checkpoint> ck = InternalError("not run");
        {
          py::gil_scoped_release release;
          ck = read_checkpoint(path);
        }
        const Checkpoint c = unwrap(std::move(ck));
        py::dict out;
        out["config"] = to_python(c.config);
        out["feature_stats"] = to_python(c.feature_stats);
        out["meta"] = to_python(c.meta);
        std::vector<std::string> names;
        for (const auto& t : c.tensors) names.push_back(t.name);
        out["tensors"] = names;
        return out;
      },
      py::arg("path"));
}

}  // namespace fxt::python
