// TrainConfig: checks, JSON form and names of its enums (see train_config.h).
#include "train/train_config.h"

#include <cmath>

#include <fmt/format.h>

#include "features/features.h"
#include "features/labels.h"

namespace fxt {

const char* model_kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::kLogReg:
      return "logreg";
    case ModelKind::kGbdt:
      return "gbdt";
    default:
      return "perception";
  }
}

const char* input_skip_name(InputSkip s) {
  switch (s) {
    case InputSkip::kOff:
      return "off";
    case InputSkip::kZero:
      return "zero";
    case InputSkip::kGam:
      return "gam";
    default:
      return "logreg";
  }
}

Result<InputSkip> parse_input_skip(const std::string& s) {
  if (s == "off") return InputSkip::kOff;
  if (s == "zero") return InputSkip::kZero;
  if (s == "logreg") return InputSkip::kLogReg;
  if (s == "gam") return InputSkip::kGam;
  return UsageError("--input-skip must be logreg, gam, zero or off (got '{}')", s);
}

namespace {

Result<ModelKind> parse_model_kind(const std::string& s) {
  if (s == "perception") return ModelKind::kPerception;
  if (s == "logreg") return ModelKind::kLogReg;
  if (s == "gbdt") return ModelKind::kGbdt;
  return UsageError("--model must be perception, logreg or gbdt (got '{}')", s);
}

}  // namespace

namespace train_detail {

Result<StopMetric> parse_stop_metric(const std::string& s, const std::vector<int>& horizons) {
  if (s == "val_loss") return StopMetric{true, -1};
  if (s == "mean_auc") return StopMetric{false, -1};
  if (s.rfind("auc_h", 0) == 0) {
    for (size_t i = 0; i < horizons.size(); ++i) {
      if (s == fmt::format("auc_h{}", horizons[i])) return StopMetric{false, static_cast<int>(i)};
    }
  }
  return UsageError(
      "--early-stop must be val_loss, mean_auc or auc_h<h> for a trained horizon h "
      "(got '{}')",
      s);
}

}  // namespace train_detail

using train_detail::parse_stop_metric;

Status TrainConfig::validate() const {
  if (steps_per_epoch < 1) return UsageError("--steps-per-epoch must be >= 1");
  if (epochs < 1) return UsageError("--epochs must be >= 1");
  if (batch < 1) return UsageError("--batch must be >= 1");
  if (window < 1) return UsageError("--seq must be >= 1");
  if (stride < 1) return UsageError("--stride must be >= 1");
  if (eval_batch < 1) return UsageError("--eval-batch must be >= 1");
  if (threads < 1) return UsageError("--threads must be >= 1");
  if (patience < 0) return UsageError("--patience must be >= 0");
  if (!(lr > 0) || !std::isfinite(lr)) return UsageError("--lr must be positive");
  if (warmup_steps < 0) return UsageError("--warmup must be >= 0");
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) return UsageError("--min-lr-ratio not in [0,1]");
  if (!(weight_decay >= 0)) return UsageError("--weight-decay must be >= 0");
  for (double m : {lr_mult_mamba, lr_mult_cfc, lr_mult_heads}) {
    if (!(m >= 0) || !std::isfinite(m)) return UsageError("--lr-mult-* must be >= 0");
  }
  if (split.explicit_ranges) {
    // Order and purge gaps are checked against the data by Dataset::build.
    if (split.train_range.size() == 0 || split.validation_range.size() == 0 ||
        split.test_range.begin > split.test_range.end) {
      return UsageError("explicit split ranges need non-empty train and validation ranges");
    }
  } else if (!(split.train > 0 && split.validation > 0 && split.train + split.validation < 1)) {
    return UsageError("--split-train and --split-val must be positive and sum to below 1");
  }
  LabelConfig lc;
  lc.horizons = horizons;
  lc.min_move_ticks = min_move_ticks;
  FXT_RETURN_IF_ERROR(validate_label_config(lc));
  for (size_t i = 0; i < drop_features.size(); ++i) {
    if (drop_features[i] < 0 || drop_features[i] >= kFeatureDim ||
        (i > 0 && drop_features[i] <= drop_features[i - 1])) {
      return UsageError("--drop-features must name distinct slots 0-{}", kFeatureDim - 1);
    }
  }
  if (static_cast<int>(drop_features.size()) == kFeatureDim) {
    return UsageError("--drop-features leaves no feature");
  }
  FXT_RETURN_IF_ERROR(parse_stop_metric(early_stop, horizons).status());
  FXT_RETURN_IF_ERROR(baselines.validate());
  if (input_skip == InputSkip::kGam && model == ModelKind::kPerception) {
    if (perception.ple_bins == 0) return UsageError("--input-skip gam needs --ple-bins K");
    if (baselines.gam && baselines.gam_bins != perception.ple_bins) {
      return UsageError(
          "--input-skip gam starts from the gam baseline: --gam-bins ({}) must "
          "equal --ple-bins ({})",
          baselines.gam_bins, perception.ple_bins);
    }
  }
  if (model == ModelKind::kPerception) {
    FXT_RETURN_IF_ERROR(perception_config().validate());
  }
  return Status::Ok();
}

model::PerceptionConfig TrainConfig::perception_config() const {
  model::PerceptionConfig pc = perception;
  pc.features = kFeatureDim;
  pc.horizons = static_cast<int>(horizons.size());
  pc.input_skip = input_skip != InputSkip::kOff;
  return pc;
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j;
  j["seed"] = seed;
  j["steps_per_epoch"] = steps_per_epoch;
  j["epochs"] = epochs;
  j["batch"] = batch;
  j["window"] = window;
  j["stride"] = stride;
  j["cfc_time"] = cfc_time_real ? "real" : "stride";
  j["horizons"] = horizons;
  j["min_move_ticks"] = min_move_ticks;
  j["drop_features"] = drop_features;
  j["split_train"] = split.train;
  j["split_validation"] = split.validation;
  if (split.explicit_ranges) {  // absent in the default (fraction) form
    auto range = [](const GlobalRange& r) { return nlohmann::json::array({r.begin, r.end}); };
    j["split_ranges"] = {{"train", range(split.train_range)},
                         {"validation", range(split.validation_range)},
                         {"test", range(split.test_range)}};
  }
  j["lr"] = lr;
  j["warmup_steps"] = warmup_steps;
  j["min_lr_ratio"] = min_lr_ratio;
  j["weight_decay"] = weight_decay;
  j["clip"] = clip;
  j["lr_mult_mamba"] = lr_mult_mamba;
  j["lr_mult_cfc"] = lr_mult_cfc;
  j["lr_mult_heads"] = lr_mult_heads;
  j["weighting"] = model::horizon_weighting_name(weighting);
  j["lambda"] = lambda;
  j["early_stop"] = early_stop;
  j["patience"] = patience;
  j["model"] = model_kind_name(model);
  j["d_model"] = perception.d_model;
  j["d_state"] = perception.d_state;
  j["head_dim"] = perception.head_dim;
  j["expand"] = perception.expand;
  j["d_conv"] = perception.d_conv;
  j["head_mid"] = perception.head_mid;
  j["input_skip"] = input_skip_name(input_skip);
  j["snapshot_heads"] = perception.snapshot_heads;
  j["ple_bins"] = perception.ple_bins;
  j["causal"] = perception.causal;
  j["logistic_fallback"] = logistic_fallback;
  j["eval_batch"] = eval_batch;
  j["baselines"] = baselines.to_json();
  return j;
}

Result<TrainConfig> TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  try {
    c.seed = j.at("seed").get<uint64_t>();
    c.steps_per_epoch = j.at("steps_per_epoch").get<int64_t>();
    c.epochs = j.at("epochs").get<int>();
    c.batch = j.at("batch").get<int>();
    c.window = j.at("window").get<int>();
    c.stride = j.at("stride").get<int>();
    c.cfc_time_real = j.value("cfc_time", std::string("stride")) == "real";
    c.horizons = j.at("horizons").get<std::vector<int>>();
    c.min_move_ticks = j.at("min_move_ticks").get<int64_t>();
    c.drop_features = j.value("drop_features", std::vector<int>{});
    c.split.train = j.at("split_train").get<double>();
    c.split.validation = j.at("split_validation").get<double>();
    if (j.contains("split_ranges")) {
      const nlohmann::json& r = j.at("split_ranges");
      auto range = [](const nlohmann::json& a) {
        return GlobalRange{a.at(0).get<uint64_t>(), a.at(1).get<uint64_t>()};
      };
      c.split.explicit_ranges = true;
      c.split.train_range = range(r.at("train"));
      c.split.validation_range = range(r.at("validation"));
      c.split.test_range = range(r.at("test"));
    }
    c.lr = j.at("lr").get<double>();
    c.warmup_steps = j.at("warmup_steps").get<int64_t>();
    c.min_lr_ratio = j.at("min_lr_ratio").get<double>();
    c.weight_decay = j.at("weight_decay").get<double>();
    c.clip = j.at("clip").get<double>();
    c.lr_mult_mamba = j.at("lr_mult_mamba").get<double>();
    c.lr_mult_cfc = j.at("lr_mult_cfc").get<double>();
    c.lr_mult_heads = j.at("lr_mult_heads").get<double>();
    FXT_ASSIGN_OR_RETURN(c.weighting,
                         model::parse_horizon_weighting(j.at("weighting").get<std::string>()));
    c.lambda = j.at("lambda").get<bool>();
    c.early_stop = j.at("early_stop").get<std::string>();
    c.patience = j.at("patience").get<int>();
    FXT_ASSIGN_OR_RETURN(c.model, parse_model_kind(j.at("model").get<std::string>()));
    c.perception.d_model = j.at("d_model").get<int>();
    c.perception.d_state = j.at("d_state").get<int>();
    c.perception.head_dim = j.at("head_dim").get<int>();
    c.perception.expand = j.at("expand").get<int>();
    c.perception.d_conv = j.at("d_conv").get<int>();
    c.perception.head_mid = j.at("head_mid").get<int>();
    // Checkpoints from before the skip path hold the model without it.
    FXT_ASSIGN_OR_RETURN(c.input_skip, parse_input_skip(j.value("input_skip", std::string("off"))));
    c.logistic_fallback = j.value("logistic_fallback", false);  // absent: a run from before it
    c.perception.snapshot_heads = j.value("snapshot_heads", false);  // absent: before them
    c.perception.ple_bins = j.value("ple_bins", 0);                  // absent: before it
    c.perception.causal = j.value("causal", false);                  // absent: before it
    c.eval_batch = j.at("eval_batch").get<int>();
    FXT_ASSIGN_OR_RETURN(c.baselines, BaselineConfig::from_json(j.at("baselines")));
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("bad training config: {}", e.what());
  }
  return c;
}

DatasetConfig TrainConfig::dataset_config() const {
  DatasetConfig d;
  d.sequence.window = window;
  d.sequence.stride = stride;
  d.split = split;
  d.labels.horizons = horizons;
  d.labels.min_move_ticks = min_move_ticks;
  d.threads = threads;
  return d;
}

}  // namespace fxt
