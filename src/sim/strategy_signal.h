// The `signal` strategy of DESIGN §7.3: the model's probability that the mid goes up at one
// horizon, mapped to one of eight exposure levels by thresholds, optionally sized by
// fractional Kelly, entered with market orders or passively at the touch, and flattened after
// a maximum holding time. docs/BACKTEST.md lists the parameters and their defaults.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sim/signal_rules.h"
#include "sim/strategy.h"

namespace fxt {
class StoreReader;
}

namespace fxt::sim {

// Probabilities at one horizon for every snapshot of every store of a backtest.
struct SignalSeries {
  int horizon = 0;                            // the p_h<horizon> column they came from
  std::vector<std::vector<float>> per_store;  // [store][snapshot], in [0, 1]

  // p for the snapshot; 0.5 (no opinion) when the store or snapshot is out of range.
  double at(uint32_t store, uint64_t snapshot) const {
    if (store >= per_store.size() || snapshot >= per_store[store].size()) return 0.5;
    return per_store[store][snapshot];
  }
};

// Reads one column of a `fxt predict` CSV ("ts_ns,p_h<h1>,p_h<h2>,..."; one row per snapshot
// of `store`, in snapshot order). horizon 0 takes the first probability column; *chosen
// (may be null) receives the horizon read. Errors name "file:line": a missing column, a row
// count other than the store's snapshots, a ts_ns other than the snapshot's, a field that is
// not a number or a probability outside [0, 1].
Result<std::vector<float>> load_predictions(const std::string& csv_path, int horizon,
                                            const StoreReader& store, int* chosen = nullptr);

// The eight exposure levels. kHold keeps the current target; kFlat closes it. Numbered as
// sim/signal_rules.h's kSig* codes.
enum class Exposure : int8_t {
  kShortFull = kSigShortFull,
  kShortHalf = kSigShortHalf,
  kShortSmall = kSigShortSmall,
  kHold = kSigHold,
  kLongSmall = kSigLongSmall,
  kLongHalf = kSigLongHalf,
  kLongFull = kSigLongFull,
  kFlat = kSigFlat,
};
const char* exposure_name(Exposure e);  // "short_full", ..., "hold", ..., "flat"

struct SignalConfig {
  // Thresholds on p (probability the mid goes up). p >= long_full -> long full, else
  // p >= long_half -> long half, else p >= long_small -> long small; symmetrically p <=
  // short_full/half/small -> short; |p - 0.5| <= flat_band -> flat; otherwise hold.
  double long_small = 0.55, long_half = 0.60, long_full = 0.65;
  double short_small = 0.45, short_half = 0.40, short_full = 0.35;
  double flat_band = 0.02;
  // Exposure (fraction of max_position) of each level.
  double size_small = 0.25, size_half = 0.5, size_full = 1.0;
  // Fractional Kelly: kelly = c > 0 replaces a long/short level's size by c·(2p − 1),
  // clipped to ±kelly_cap (the level still decides whether to trade at all).
  double kelly = 0;
  double kelly_cap = 1.0;
  double max_position = 1;  // units at exposure ±1
  double lot = 0;           // > 0: targets rounded toward zero to a multiple of lot
  bool passive = false;     // false: market orders; true: post-only limit at our touch
  int64_t max_hold_ns = 0;  // > 0: flatten a position held this long (then wait for a new level)

  // Thresholds ordered short_full < short_half < short_small < 0.5 < long_small < long_half <
  // long_full, flat band inside (short_small, long_small), sizes and caps > 0.
  Status validate() const;
  nlohmann::json to_json() const;
};

// The config as signal_rules.h's parameters (eps = 1e-9 · max(1, max_position)).
SignalParams signal_params(const SignalConfig& c);

// The exposure level of p (p outside [0, 1] is clamped).
Exposure classify_probability(const SignalConfig& c, double p);
// The target exposure in [-1, 1] of a long/short level at p (level size or capped Kelly);
// 0 for kFlat; `current` for kHold.
double level_exposure(const SignalConfig& c, Exposure level, double p, double current);

// The price and total size last asked of a working order (passive entry).
struct SignalRequested {
  uint64_t order_id;
  int64_t px;
  double qty;
};

// The decisions are sim/signal_rules.h's (shared with the GPU lanes); this class adapts them
// to the engine's StrategyContext and keeps the order lists.
class SignalStrategy : public Strategy {
 public:
  SignalStrategy(const SignalConfig& config, std::shared_ptr<const SignalSeries> series);

  void on_event(const MarketEvent& event, StrategyContext& ctx) override;
  void on_ack(const Ack& ack, StrategyContext& ctx) override;

  double target_position() const { return state_.target; }
  Exposure last_level() const { return static_cast<Exposure>(state_.level); }

 private:
  SignalParams params_;
  std::shared_ptr<const SignalSeries> series_;
  SignalState state_;
  std::vector<uint64_t> cancel_sent_;       // orders we asked to cancel
  std::vector<SignalRequested> requested_;  // what we last asked of working orders
};

}  // namespace fxt::sim
