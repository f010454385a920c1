// fxt synth --out FILE.dbn.zst --events N --seed S: the synthetic queue-reactive market.
#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_util.h"
#include "core/progress.h"
#include "data/synth.h"

namespace fxt::cli {

namespace {
struct SynthArgs {
  SynthConfig config;
  std::string out;
  double tick = 0.25;
  double start_price = 5000.0;
  bool json = false;
  bool latent = false;
};

Status run_synth(SynthArgs a) {
  if (a.config.events == 0) return UsageError("--events must be at least 1");
  if (!(a.tick > 0)) return UsageError("--tick {}: expected a positive price increment", a.tick);
  a.config.tick_px = static_cast<int64_t>(a.tick * 1e9 + 0.5);
  a.config.start_px = static_cast<int64_t>(a.start_price * 1e9 + 0.5);
  Progress progress("synth", a.config.events, "ev");
  SynthStats s;
  auto t0 = std::chrono::steady_clock::now();
  // --latent: OUT.latent (the latent state per event) and OUT.synth.json (the exact config, which
  // `fxt eval --oracle` regenerates the market from).
  FXT_RETURN_IF_ERROR(synthesize_market(a.config, a.out, &s, &progress, a.latent));
  progress.finish();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json j = synth_stats_json(a.out, s);
  j["seconds"] = secs;
  if (a.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print(
        "{}: {} events ({} adds, {} cancels, {} trades), mean spread {:.2f} ticks, mid "
        "range {:.0f} ticks, imbalance/future-mid correlation {:.3f}, {:.1f} s\n",
        a.out, s.events, s.adds, s.cancels, s.trades, s.mean_spread_ticks, s.mid_range_ticks,
        s.imbalance_corr, secs);
  }
  return Status::Ok();
}
}  // namespace

void register_synth(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* cmd =
      add_command(app, "synth", "generate a synthetic queue-reactive market as a DBN mbp-10 file",
                  [a] { return run_synth(*a); });
  cmd->add_option("-o,--out", a->out, "output DBN file (.dbn.zst compresses)")->required();
  cmd->add_option("-n,--events", a->config.events, "number of book events")
      ->capture_default_str()
      ->check(int_range(1, 10000000000));
  cmd->add_option("--seed", a->config.seed, "random seed (same seed, same bytes)")
      ->capture_default_str();
  cmd->add_option("--tick", a->tick, "tick size in price units")
      ->capture_default_str()
      ->check(finite_number(1e-9, 1e9));
  cmd->add_option("--start-price", a->start_price, "initial best bid")
      ->capture_default_str()
      ->check(finite_number(1e-9, 1e9));
  cmd->add_option("--symbol", a->config.symbol, "instrument symbol")->capture_default_str();
  cmd->add_option("--drift-skew", a->config.drift_market_skew,
                  "latent drift's skew of market buys against sells (0 = off)")
      ->capture_default_str();
  cmd->add_option("--momentum-skew", a->config.momentum_skew,
                  "momentum regime's skew of market orders (0 = off; docs/SYNTH.md)")
      ->capture_default_str();
  cmd->add_option("--regime-tau", a->config.regime_tau_s, "mean life of a momentum regime, seconds")
      ->capture_default_str()
      ->check(finite_number(0, 1e9));
  cmd->add_option("--activity-speed", a->config.activity_speed,
                  "activity regime: event-rate multiplier in active spells (docs/SYNTH.md)")
      ->capture_default_str()
      ->check(finite_number(1, 10));
  cmd->add_option("--activity-quiet-gain", a->config.activity_quiet_gain,
                  "activity regime: drift skews' multiplier in quiet spells")
      ->capture_default_str()
      ->check(finite_number(0, 10));
  cmd->add_option("--activity-active-gain", a->config.activity_active_gain,
                  "activity regime: drift skews' multiplier in active spells")
      ->capture_default_str()
      ->check(finite_number(0, 10));
  cmd->add_option("--activity-quiet-life", a->config.activity_quiet_s,
                  "activity regime: mean life of a quiet spell, seconds")
      ->capture_default_str()
      ->check(finite_number(1e-3, 1e9));
  cmd->add_option("--activity-active-life", a->config.activity_active_s,
                  "activity regime: mean life of an active spell, seconds")
      ->capture_default_str()
      ->check(finite_number(1e-3, 1e9));
  cmd->add_option("--response-regime-life", a->config.response_regime_s,
                  "response regime: mean life of a regime, seconds (0 = off; docs/SYNTH.md)")
      ->capture_default_str()
      ->check(finite_number(0, 1e6));
  cmd->add_option("--response-regime-beta", a->config.response_regime_beta,
                  "response regime: the market orders' answer to the touch imbalance in the "
                  "second regime (the first: --imbalance-beta)")
      ->capture_default_str()
      ->check(finite_number(-0.999, 0.999));
  cmd->add_option("--response-cancel-skew", a->config.response_cancel_skew,
                  "response regime: touch cancels x exp(-/+ skew b imb) on the bid / ask")
      ->capture_default_str()
      ->check(finite_number(0, 5));
  cmd->add_option("--meta-gap", a->config.meta_gap_s,
                  "meta-order: mean wait, seconds, for the next one to start (0 = off; "
                  "docs/SYNTH.md)")
      ->capture_default_str()
      ->check(finite_number(0, 1e6));
  cmd->add_option("--meta-life", a->config.meta_life_s,
                  "meta-order: mean time it accumulates (sends clips), seconds")
      ->capture_default_str()
      ->check(finite_number(1e-3, 1e6));
  cmd->add_option("--meta-reveal", a->config.meta_reveal_s,
                  "meta-order: mean time the others lean its way after it ends, seconds")
      ->capture_default_str()
      ->check(finite_number(1e-3, 1e6));
  cmd->add_option("--meta-clip-rate", a->config.meta_clip_rate,
                  "meta-order: its market orders (clips) per second")
      ->capture_default_str()
      ->check(finite_number(0, 1000));
  cmd->add_option("--meta-clip-lots", a->config.meta_clip_lots, "meta-order: lots per clip")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  cmd->add_option("--meta-skew", a->config.meta_skew,
                  "meta-order: the others' lean in the reveal (market x exp(+-skew), book half)")
      ->capture_default_str()
      ->check(finite_number(0, 5));
  cmd->add_option("--imbalance-beta", a->config.market_imbalance_beta,
                  "market buys x (1 + beta imb), sells x (1 - beta imb)")
      ->capture_default_str()
      ->check(finite_number(0, 0.999));
  cmd->add_flag("--json", a->json, "print the run's statistics as JSON");
  cmd->add_flag("--latent", a->latent,
                "also write OUT.latent (latent state per event) and OUT.synth.json (the config "
                "for `fxt eval --oracle`)");
}

}  // namespace fxt::cli
