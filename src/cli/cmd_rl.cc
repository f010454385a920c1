// fxt rl train / fxt rl eval: the distributional DQN agents on the RL environments (DESIGN §8,
// docs/RL.md). Train writes RUN_DIR/metrics.jsonl, RUN_DIR/checkpoint.fxt and run.json; eval
// compares a checkpoint's greedy policy with the env's closed-form reference on seeded episodes.
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_util.h"
#include "core/log.h"
#include "rl/evaluate.h"
#include "rl/resume.h"
#include "rl/trainer.h"
#if FXT_HAVE_CUDA
#include "rl/device_trainer.h"
#endif
#include "train/run_record.h"

namespace fxt::cli {

namespace {
constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

struct RlTrainArgs {
  rl::EnvSpec env;
  rl::DqnConfig cfg;
  rl::TrainOptions opts;
  std::string algo = "c51", exploration = "egreedy", hidden = "120,84", device = "cpu";
  double v_min = kUnset, v_max = kUnset;
  bool no_double = false;
};

Status parse_hidden(const std::string& text, std::vector<int>* out) {
  FXT_ASSIGN_OR_RETURN(*out, parse_int_list("--hidden", text, 1, 1 << 16));
  return Status::Ok();
}

// Configurations under which no update would ever run: they trained nothing and wrote an
// untrained checkpoint with exit 0 (docs/ROBUSTNESS.md). Refused before any work.
Status check_learns(const rl::DqnConfig& c) {
  if (c.num_envs > c.total_steps) {
    return UsageError(
        "--envs {} exceeds --steps {} (env steps over all lanes): no lane would "
        "take a step",
        c.num_envs, c.total_steps);
  }
  if (c.batch > c.buffer_size) {
    return UsageError(
        "--batch {} exceeds --buffer-size {}: the replay buffer can never hold a "
        "batch, so no update would run",
        c.batch, c.buffer_size);
  }
  if (c.batch > c.total_steps) {
    return UsageError(
        "--batch {} exceeds --steps {}: the replay buffer would never hold a "
        "batch, so no update would run",
        c.batch, c.total_steps);
  }
  if (c.learning_starts >= c.total_steps) {
    return UsageError(
        "--learning-starts {} is not below --steps {}: no update would run "
        "(lower --learning-starts)",
        c.learning_starts, c.total_steps);
  }
  return Status::Ok();
}

// The run directory must not hold another run: an rl train pointed at a training run's
// directory truncated its metrics.jsonl and wrote checkpoint.fxt into it before run.json's
// kind check refused, and a second rl train replaced the first one's checkpoint. A directory
// left by a killed rl train before its first checkpoint (metrics.jsonl only) is taken over; one
// left after a checkpoint holds resume.fxt and is continued with --resume.
Status claim_new_run_dir(const RunRecord& record, const std::string& dir) {
  FXT_RETURN_IF_ERROR(record.claim(dir));
  std::error_code ec;
  auto exists = [&](const char* file) { return std::filesystem::exists(dir + "/" + file, ec); };
  if (!exists("run.json") && exists(rl::kResumeFile)) {
    return UsageError(
        "{} already holds an unfinished run ({}): add --resume to continue it, give another "
        "--out, or remove it to start over",
        dir, rl::kResumeFile);
  }
  for (const char* file : {"run.json", "checkpoint.fxt"}) {
    if (exists(file)) {
      return UsageError(
          "{} already holds a run ({}): give another --out, or remove it to start over", dir, file);
    }
  }
  return Status::Ok();
}

// --resume continues an unfinished rl-train run: a finished one (run.json, written last) has
// nothing left to do; the resume state itself is checked by the trainer (rl/resume.h).
Status claim_resumed_run_dir(const RunRecord& record, const std::string& dir) {
  FXT_RETURN_IF_ERROR(record.claim(dir));
  std::error_code ec;
  if (std::filesystem::exists(dir + "/" + kRunRecordFile, ec)) {
    return UsageError("--resume: {}/{} records a finished run: there is nothing to resume", dir,
                      kRunRecordFile);
  }
  return Status::Ok();
}

Status run_rl_train(RlTrainArgs a) {
  FXT_RETURN_IF_ERROR(a.env.validate());
  if (a.algo != "c51" && a.algo != "qrdqn" && a.algo != "iqn")
    return UsageError("--algo '{}': expected c51, qrdqn or iqn", a.algo);
  a.cfg.algo = a.algo == "c51" ? rl::Algo::kC51 : a.algo == "qrdqn" ? rl::Algo::kQrDqn : rl::Algo::kIqn;
  if (a.exploration != "egreedy" && a.exploration != "thompson")
    return UsageError("--exploration '{}': expected egreedy or thompson", a.exploration);
  a.cfg.exploration =
      a.exploration == "egreedy" ? rl::Exploration::kEpsilonGreedy : rl::Exploration::kThompson;
  FXT_RETURN_IF_ERROR(parse_hidden(a.hidden, &a.cfg.hidden));
  const rl::Support def = a.env.default_support();
  a.cfg.support.v_min = std::isnan(a.v_min) ? def.v_min : a.v_min;
  a.cfg.support.v_max = std::isnan(a.v_max) ? def.v_max : a.v_max;
  a.cfg.double_q = !a.no_double;
  FXT_RETURN_IF_ERROR(a.cfg.validate());
  if (a.opts.log_every < 1) return UsageError("--log-every must be >= 1");
  if (a.opts.eval_episodes < 1) return UsageError("--eval-episodes must be >= 1");
  if (a.opts.eval_every < 0 || a.opts.checkpoint_every < 0)
    return UsageError("--eval-every and --checkpoint-every must be >= 0");
  if (a.opts.stop_after_steps < 0) return UsageError("--stop-after must be >= 0");
  FXT_RETURN_IF_ERROR(check_learns(a.cfg));
  FXT_RETURN_IF_ERROR(rl::check_mirror_flags(a.cfg, a.env));  // before the run directory
  if (a.device != "cpu" && a.device != "cuda")
    return UsageError("--device '{}': expected cpu or cuda", a.device);
  // Before the run directory is claimed.
  FXT_RETURN_IF_ERROR(rl::check_resume_options(a.opts, a.device == "cuda"));
#if FXT_HAVE_CUDA
  if (a.device == "cuda") {
    FXT_RETURN_IF_ERROR(rl::device_learner_supports(a.cfg));
    if (!gpu::cuda_available()) return UsageError("--device cuda: no CUDA device is usable");
  }
#else
  if (a.device == "cuda") return UsageError("--device cuda: this build has no CUDA backend");
#endif
  RunRecord record("rl-train");
  FXT_RETURN_IF_ERROR(a.opts.resume ? claim_resumed_run_dir(record, a.opts.out_dir)
                                    : claim_new_run_dir(record, a.opts.out_dir));
  auto env = a.env.make(1);
  rl::DqnAgent agent(a.cfg, env->obs_dim(), env->num_actions());
  const nlohmann::json config = {{"agent", a.cfg.to_json()},
                                 {"env", a.env.to_json()},
                                 {"device", a.device},
                                 {"eval_every", a.opts.eval_every},
                                 {"eval_episodes", a.opts.eval_episodes},
                                 {"eval_seed", a.opts.eval_seed},
                                 {"stop_return", std::isnan(a.opts.stop_return)
                                                     ? nlohmann::json()
                                                     : nlohmann::json(a.opts.stop_return)}};
  record.set_config(config);
  rl::TrainResult r;
#if FXT_HAVE_CUDA
  if (a.device == "cuda") {
    FXT_ASSIGN_OR_RETURN(r, rl::train_dqn_device(a.env, a.opts, &agent));
  } else {
    FXT_ASSIGN_OR_RETURN(r, rl::train_dqn(a.env, a.opts, &agent));
  }
#else
  FXT_ASSIGN_OR_RETURN(r, rl::train_dqn(a.env, a.opts, &agent));
#endif
  if (r.interrupted) {
    fmt::print(
        "{}: stopped after the checkpoint at {} env steps ({} updates, {} episodes); "
        "continue with --resume\n",
        a.opts.out_dir, r.env_steps, r.updates, r.episodes);
    return Status::Ok();
  }
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [s, v] : r.eval_curve) curve.push_back({s, v});
  record.set("eval_curve", curve);
  record.set("checkpoint", a.opts.out_dir + "/checkpoint.fxt");
  record.set_metrics({{"env_steps", r.env_steps},
                      {"updates", r.updates},
                      {"episodes", r.episodes},
                      {"train_seconds", r.seconds},
                      {"eval_return", r.last_eval_mean},
                      {"recent_return", r.mean_recent_return},
                      {"reached_stop_return_at", r.reached_stop_return_at}});
  record.set("resumed", a.opts.resume);
  FXT_RETURN_IF_ERROR(record.write(a.opts.out_dir));
  {  // finished: the resume state (the replay buffer and all) has served its purpose
    std::error_code ec;
    std::filesystem::remove(a.opts.out_dir + "/" + rl::kResumeFile, ec);
    if (ec) log_warn("{}/{}: cannot remove: {}", a.opts.out_dir, rl::kResumeFile, ec.message());
  }
  if (r.updates == 0) {
    log_warn(
        "{}: no update ran (too few transitions for --batch after --learning-starts): the "
        "checkpoint is the untrained network",
        a.opts.out_dir);
  }
  fmt::print("{}: {} {} on {} ({}): {} env steps, {} updates, {} episodes, {:.1f} s, eval return {:.3f}"
             "{}\n",
             a.opts.out_dir, a.algo, a.cfg.munchausen ? "(munchausen)" : "", a.env.name, a.device,
             r.env_steps, r.updates, r.episodes, r.seconds, r.last_eval_mean,
             r.reached_stop_return_at >= 0
                 ? fmt::format(" (reached {} at {} steps)", a.opts.stop_return,
                               r.reached_stop_return_at)
                 : std::string());
  return Status::Ok();
}

struct RlEvalArgs {
  std::string checkpoint, out, reference;
  int episodes = 100;
  uint64_t seed = 12345;
  double gamma = 0.1;
};

Status run_rl_eval(const RlEvalArgs& a) {
  if (a.episodes < 1) return UsageError("--episodes must be >= 1, got {}", a.episodes);
  FXT_ASSIGN_OR_RETURN(rl::LoadedAgent loaded, rl::read_agent_checkpoint(a.checkpoint));
  const rl::EvalResult policy =
      rl::evaluate_agent(loaded.agent.get(), loaded.spec, a.episodes, a.seed);
  nlohmann::json j = {{"checkpoint", a.checkpoint},
                      {"env", loaded.spec.to_json()},
                      {"episodes", a.episodes},
                      {"seed", a.seed},
                      {"env_steps", loaded.env_steps},
                      {"policy_mean", policy.mean},
                      {"policy_std", policy.std}};
  std::string reference = a.reference;
  if (reference.empty()) reference = loaded.spec.name == "execution" ? "optimal"
                                     : loaded.spec.name == "mm"      ? "cj"
                                                                     : "";
  if (!reference.empty()) {
    FXT_ASSIGN_OR_RETURN(rl::EvalResult ref, rl::evaluate_reference(loaded.spec, reference,
                                                                    a.gamma, a.episodes, a.seed));
    const double q_scale = loaded.spec.name == "execution" ? loaded.spec.execution.q0
                                                            : loaded.spec.mm.max_inventory;
    j["reference"] = reference;
    if (reference == "as") j["gamma"] = a.gamma;
    j["comparison"] = rl::compare_to_reference(policy, ref, q_scale);
    if (loaded.spec.name == "execution")
      j["closed_form_value"] = rl::execution_optimal_value(loaded.spec.execution);
  }
  FXT_RETURN_IF_ERROR(write_file_atomic(a.out, j.dump(2) + "\n"));
  fmt::print("{}: policy mean {:.4f} (std {:.4f}) over {} episodes{}\n", a.out, policy.mean,
             policy.std, a.episodes,
             j.contains("comparison")
                 ? fmt::format(", {} mean {:.4f}, paired diff {:.4f} ± {:.4f}", reference,
                               j["comparison"]["reference_mean"].get<double>(),
                               j["comparison"]["paired_diff_mean"].get<double>(),
                               j["comparison"]["paired_diff_se"].get<double>())
                 : std::string());
  return Status::Ok();
}
}  // namespace

void register_rl(CLI::App& app) {
  CLI::App* rl = app.add_subcommand("rl", "reinforcement learning: DQN agents on model envs");
  rl->require_subcommand(1);

  auto t = std::make_shared<RlTrainArgs>();
  CLI::App* train = add_command(*rl, "train", "train a distributional DQN agent",
                                [t] { return run_rl_train(*t); });
  train->add_option("--env", t->env.name, "cartpole | execution | mm")->capture_default_str();
  train->add_option("--algo", t->algo, "c51 | qrdqn | iqn")->capture_default_str();
  train->add_flag("--munchausen", t->cfg.munchausen, "Munchausen target (tau, alpha, l0 below)");
  train->add_flag("--mirror", t->cfg.mirror,
                  "also store each transition's mirror image (mm: q -> -q, bid <-> ask)");
  train->add_flag("--symmetric-policy", t->cfg.symmetric_policy,
                  "act and bootstrap on (Q(s,a) + Q(m(s),m(a)))/2 under the env's mirror m "
                  "(mm; c51 or qrdqn, egreedy)");
  train->add_option("--m-tau", t->cfg.mdqn.tau, "Munchausen temperature")->capture_default_str();
  train->add_option("--m-alpha", t->cfg.mdqn.alpha, "Munchausen bonus scale")->capture_default_str();
  train->add_option("--m-l0", t->cfg.mdqn.l0, "Munchausen clip")->capture_default_str();
  train->add_flag("--dueling", t->cfg.dueling, "dueling value/advantage head");
  train->add_flag("--no-double", t->no_double, "bootstrap with the target net's argmax");
  train->add_option("--n-step", t->cfg.n_step, "n-step returns")->capture_default_str();
  train->add_option("--gamma", t->cfg.gamma, "discount")->capture_default_str();
  train->add_option("--atoms", t->cfg.support.atoms, "C51 atoms")->capture_default_str();
  train->add_option("--v-min", t->v_min, "C51 support minimum (default: the env's)");
  train->add_option("--v-max", t->v_max, "C51 support maximum (default: the env's)");
  train->add_option("--quantiles", t->cfg.quantiles, "QR-DQN quantiles")->capture_default_str();
  train->add_option("--iqn-taus", t->cfg.iqn_taus, "IQN: sampled tau per state (N = N')")
      ->capture_default_str();
  train->add_option("--iqn-policy-taus", t->cfg.iqn_policy_taus, "IQN: tau for acting (K)")
      ->capture_default_str();
  train->add_option("--iqn-embedding", t->cfg.iqn_embedding, "IQN: cosine features")
      ->capture_default_str();
  train->add_option("--hidden", t->hidden, "MLP torso widths")->capture_default_str();
  train->add_option("--lr", t->cfg.lr, "Adam learning rate")->capture_default_str();
  train->add_option("--adam-eps", t->cfg.adam_eps, "Adam epsilon")->capture_default_str();
  train->add_option("--max-grad-norm", t->cfg.max_grad_norm, "gradient clip (<= 0: off)")
      ->capture_default_str();
  train->add_option("--batch", t->cfg.batch, "replay batch")->capture_default_str();
  train->add_option("--buffer-size", t->cfg.buffer_size, "replay capacity")->capture_default_str();
  train->add_option("--learning-starts", t->cfg.learning_starts, "env steps before updates")
      ->capture_default_str();
  train->add_option("--train-frequency", t->cfg.train_frequency, "env steps per update")
      ->capture_default_str();
  train->add_option("--target-update", t->cfg.target_update, "env steps per target update")
      ->capture_default_str();
  train->add_option("--polyak", t->cfg.polyak, "target averaging (1 = hard copy)")
      ->capture_default_str();
  train->add_option("--per-alpha", t->cfg.per_alpha, "prioritised replay exponent (0 = uniform)")
      ->capture_default_str();
  train->add_option("--per-beta", t->cfg.per_beta0, "initial IS exponent (annealed to 1)")
      ->capture_default_str();
  train->add_option("--exploration", t->exploration, "egreedy | thompson")->capture_default_str();
  train->add_option("--eps-start", t->cfg.eps_start, "initial epsilon")->capture_default_str();
  train->add_option("--eps-end", t->cfg.eps_end, "final epsilon")->capture_default_str();
  train->add_option("--exploration-fraction", t->cfg.exploration_fraction,
                    "fraction of steps over which epsilon decays")
      ->capture_default_str();
  train->add_option("--steps", t->cfg.total_steps, "env steps (all lanes)")->capture_default_str();
  train->add_option("--envs", t->cfg.num_envs, "parallel env lanes")->capture_default_str();
  train
      ->add_option("--device", t->device,
                   "cpu | cuda (the GPU learner: C51, QR-DQN or IQN, uniform or prioritised "
                   "replay, egreedy)")
      ->capture_default_str();
  train->add_option("--seed", t->cfg.seed, "seed (same seed, same checkpoint bytes)")
      ->capture_default_str();
  train->add_option("--eval-every", t->opts.eval_every, "env steps between evaluations (0: end)")
      ->capture_default_str();
  train->add_option("--eval-episodes", t->opts.eval_episodes, "episodes per evaluation")
      ->capture_default_str();
  train->add_option("--stop-return", t->opts.stop_return, "stop when an evaluation reaches this");
  train->add_option("--log-every", t->opts.log_every, "env steps between metrics lines")
      ->capture_default_str();
  train
      ->add_option("--checkpoint-every", t->opts.checkpoint_every,
                   "env steps between checkpoints, each with the resume state (0: end)")
      ->capture_default_str();
  train->add_flag("--resume", t->opts.resume,
                  "continue the unfinished run in --out from its resume.fxt (CPU; the same flags "
                  "as the run)");
  train->add_option("--stop-after", t->opts.stop_after_steps,
                    "return after the first checkpoint this many env steps into this invocation "
                    "(continue with --resume)");
  train->add_option("--exec-phi", t->env.execution.phi, "execution: running penalty")
      ->capture_default_str();
  train->add_option("--exec-alpha", t->env.execution.alpha, "execution: terminal penalty")
      ->capture_default_str();
  train->add_option("--exec-sigma", t->env.execution.sigma, "execution: mid volatility")
      ->capture_default_str();
  train->add_option("--exec-steps", t->env.execution.steps, "execution: steps per episode")
      ->capture_default_str();
  train->add_option("--mm-phi", t->env.mm.phi, "mm: running penalty (0 with --mm-alpha 0: PnL)")
      ->capture_default_str();
  train->add_option("--mm-alpha", t->env.mm.alpha, "mm: terminal penalty")->capture_default_str();
  train->add_option("--mm-depths", t->env.mm.num_depths, "mm: grid depths per side (A: square)")
      ->capture_default_str();
  train->add_option("--mm-min-depth", t->env.mm.min_depth, "mm: smallest grid depth")
      ->capture_default_str();
  train->add_option("--mm-max-depth", t->env.mm.max_depth, "mm: largest grid depth")
      ->capture_default_str();
  train->add_flag("--mm-expected-reward", t->env.mm.expected_reward,
                  "mm: train on the reward's expectation given inventory and depths (same "
                  "expected criterion, less noise; evaluation scores the drawn reward)");
  train->add_option("-o,--out", t->opts.out_dir, "run directory")->required();

  auto e = std::make_shared<RlEvalArgs>();
  CLI::App* eval = add_command(*rl, "eval", "evaluate a checkpoint against the closed form",
                               [e] { return run_rl_eval(*e); });
  eval->add_option("--checkpoint", e->checkpoint, "checkpoint.fxt of fxt rl train")->required();
  eval->add_option("--episodes", e->episodes, "seeded episodes")->capture_default_str();
  eval->add_option("--seed", e->seed, "episode seed (both policies see the same paths)")
      ->capture_default_str();
  eval->add_option("--reference", e->reference,
                   "execution: optimal; mm: cj (default), cj-grid (CJ rounded to the action "
                   "grid) or as");
  eval->add_option("--gamma", e->gamma, "AS risk aversion")->capture_default_str();
  eval->add_option("-o,--out", e->out, "output JSON file")->required();
}

}  // namespace fxt::cli
