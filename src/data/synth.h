// Synthetic market: a seeded queue-reactive limit-order-book simulation written as DBN mbp-10.
//
// The model (docs/SYNTH.md has every formula and default): a tick grid; per side a window of
// price levels measured in ticks from the best price, each a queue (size in lots, order
// count). Limit orders, cancellations and market orders arrive as a continuous-time Markov
// jump process (Gillespie): each event kind has an intensity that depends on the touch queues
// (Huang-Lehalle-Rosenbaum style) and on a latent Ornstein-Uhlenbeck order-flow drift, so book
// imbalance and flow carry real but imperfect information about future mid moves. A depleted
// touch queue moves the price; limit orders inside a wide spread improve it. The book is never
// crossed or locked.
//
// Every event is exactly one Mbp10Msg carrying the book AFTER the event and F_LAST: action 'A'
// (add), 'C' (cancel) or 'T' (trade, side = aggressor). A market order never trades beyond
// the touch queue, so no event spans several records.
//
// Determinism: the generator uses its own xoshiro256** stream seeded by splitmix64 and only
// libm's exp/log/sqrt, so the same config and seed give byte-identical output on a given
// platform build. SynthMarket is not thread-safe; use one per thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/progress.h"
#include "core/random.h"
#include "core/status.h"
#include "data/dbn.h"

namespace fxt {

struct SynthConfig {
  uint64_t events = 1'000'000;  // records written after the definition (one per event)
  uint64_t seed = 1;
  int64_t tick_px = 250'000'000;         // 0.25 in 1e-9 units
  int64_t start_px = 5'000'000'000'000;  // 5000.00: initial best bid (rounded to the grid)
  int64_t start_ts_ns = 1'704'205'800'000'000'000;  // 2024-01-02 14:30:00 UTC

  std::string symbol = "SYN";
  std::string dataset = "FXT.SYNTH";
  uint32_t instrument_id = 1;
  uint16_t publisher_id = 1;

  // Book shape. Levels at tick distance [0, active_levels) from the best price receive adds and
  // cancels; deeper levels up to window_levels are a reservoir refilled from the stationary
  // size distribution when the price moves away from them.
  int window_levels = 32;  // 20..64
  int active_levels = 10;  // 2..window_levels

  // Order sizes in lots: 1 + floor(Exp * (mean - 1)), i.e. geometric-like with that mean.
  double limit_size_mean = 4.0;
  double market_size_mean = 6.0;    // capped at the touch queue
  double sweep_prob = 0.1;          // chance a market order takes the whole touch queue
  double refill_orders_mean = 9.0;  // orders in a refilled reservoir level

  // Intensities, events per second (per side unless stated).
  double touch_add_rate = 90.0;  // at an empty touch; x 1 / (1 + q / touch_add_half_lots)
  double touch_add_half_lots = 30.0;
  double touch_cancel_rate = 1.2;  // per resting order at the touch
  double deep_add_rate = 75.0;     // level k >= 1 weighted exp(-deep_add_decay * (k - 1))
  double deep_add_decay = 0.15;
  double deep_cancel_rate = 0.9;       // per resting order on active levels 1..
  double market_rate = 16.0;           // per side at zero imbalance and zero drift
  double market_imbalance_beta = 0.6;  // buy rate x (1 + beta * imb), sell x (1 - beta * imb)
  double inside_add_rate = 150.0;      // per side, only while the spread exceeds one tick

  // Latent order-flow drift x: Ornstein-Uhlenbeck in seconds, stationary N(0, drift_sigma^2).
  double drift_tau_s = 20.0;
  double drift_sigma = 1.0;
  double drift_market_skew = 0.3;  // market buys x exp(+skew x), sells x exp(-skew x)
  double drift_book_skew = 0.15;   // bid adds and ask cancels x exp(+skew x), mirrored

  // Latent momentum regime r = +1 / -1, flipping as a Poisson process with mean life
  // regime_tau_s: market buys x exp(+momentum_skew r tanh(m)), sells mirrored, where m is the
  // mid's recent move in ticks, forgotten with half-life momentum_halflife_s. r = +1 makes moves
  // persist, r = -1 fade. A linear model of one snapshot cannot see r; a sequence model can
  // infer it from whether the flow has been following or fading the recent moves.
  double regime_tau_s = 30.0;
  double momentum_halflife_s = 2.0;
  double momentum_skew = 0.6;

  // Latent activity regime a (0 quiet, 1 active), off by default (docs/SYNTH.md; an experiment of
  // docs/MODEL.md's ablation): a two-state Markov process in seconds with mean lives
  // activity_quiet_s and activity_active_s. While active, every intensity is multiplied by
  // activity_speed (the same events, sooner) and both drift skews by activity_active_gain; while
  // quiet, the skews by activity_quiet_gain. So flow follows the drift strongly in active spells
  // and weakly in quiet ones, and the spell shows in the event rate. Off (speed 1, both gains 1)
  // draws no random numbers for it, so the stream is the one without the regime.
  double activity_quiet_s = 10.0;
  double activity_active_s = 5.0;
  double activity_speed = 1.0;
  double activity_quiet_gain = 1.0;
  double activity_active_gain = 1.0;
  bool activity_on() const {
    return activity_speed != 1.0 || activity_quiet_gain != 1.0 || activity_active_gain != 1.0;
  }

  // Latent response regime b = +1 / -1 (docs/SYNTH.md), off by default (response_regime_s 0):
  // flipping as a Poisson process with mean life response_regime_s, it sets how market orders
  // answer the touch imbalance: buy rate x (1 + beta_b imb), sell x (1 - beta_b imb), with
  // beta_{+1} = market_imbalance_beta and beta_{-1} = response_regime_beta. One snapshot shows the
  // imbalance but not which way the flow answers it; the window's trades do (each trade's side
  // against the imbalance before it). Off draws no random numbers for it.
  // With response_cancel_skew k, touch cancels follow the regime too: bid touch cancels
  // x exp(-k b imb), ask x exp(+k b imb) (b = -1: the heavy side's orders are pulled).
  double response_regime_s = 0.0;
  double response_regime_beta = -0.6;
  double response_cancel_skew = 0.0;
  bool response_on() const { return response_regime_s > 0; }

  // Latent informed meta-order (docs/SYNTH.md), off by default (meta_gap_s 0). While none runs,
  // one starts after a mean meta_gap_s seconds on a random side d = +1 (buying) or -1. It
  // accumulates for a mean meta_life_s, sending market orders of exactly meta_clip_lots (capped
  // at the touch) on its side at meta_clip_rate per second, without moving anyone else; then its
  // information comes out: for a mean meta_reveal_s the rest of the flow leans its way (market
  // buys x exp(+meta_skew d), sells mirrored; bid adds and ask cancels x exp(+meta_skew d / 2),
  // mirrored). One snapshot shows at most one clip, and clips are a small share of the volume;
  // the window's count of clip-sized trades by side reveals d before the move.
  double meta_gap_s = 0.0;
  double meta_life_s = 3.0;
  double meta_reveal_s = 2.0;
  double meta_clip_rate = 10.0;
  uint32_t meta_clip_lots = 1;
  double meta_skew = 0.8;
  bool meta_on() const { return meta_gap_s > 0; }

  // Feed latency: ts_recv = max(previous ts_recv, ts_event + min + Exp * mean_extra).
  double feed_latency_min_ns = 20'000.0;
  double feed_latency_extra_ns = 10'000.0;
};

// What a run produced, measured on the records themselves (MarketStatsCollector).
struct SynthStats {
  uint64_t events = 0;  // mbp-10 records
  uint64_t adds = 0, cancels = 0, trades = 0;
  uint64_t traded_lots = 0;
  uint64_t mid_moves = 0;          // records whose mid differs from the previous record's
  uint64_t crossed_or_locked = 0;  // must be 0
  uint64_t off_grid = 0;           // prices not a multiple of the tick; must be 0
  uint64_t not_last = 0;           // records without F_LAST; must be 0
  uint64_t bad_levels = 0;         // unordered levels, gaps, zero sizes, counts > sizes; must be 0
  double mean_spread_ticks = 0;
  double spread_one_tick_frac = 0;
  int64_t max_spread_ticks = 0;
  double mean_touch_lots = 0;  // (bsz0 + asz0) / 2
  double mean_touch_orders = 0;
  int64_t mid_min_px = 0, mid_max_px = 0;  // 1e-9 units
  double mid_range_ticks = 0;
  int64_t net_mid_ticks = 0;  // last mid - first mid
  // Pearson correlation of the top-of-book imbalance (bsz0 - asz0) / (bsz0 + asz0) with the mid
  // change over the next `horizon` records, and the hit rate of sign(imbalance) on the nonzero
  // moves.
  int horizon = 100;
  double imbalance_corr = 0;
  double imbalance_hit_rate = 0;
  // Pearson correlation of the signed traded lots (buys +, sells -) over the previous `horizon`
  // records with the mid change over the next `horizon` records: the information in flow.
  double flow_corr = 0;
  uint64_t first_ts_ns = 0, last_ts_ns = 0;
  double mean_interarrival_ns = 0;
};

// Accumulates SynthStats over any mbp-10 record stream in order (the generator's or a file's).
class MarketStatsCollector {
 public:
  explicit MarketStatsCollector(int64_t tick_px, int horizon = 100);
  void observe(const dbn::Mbp10Msg& msg);
  SynthStats finish() const;

 private:
  static constexpr int kMaxHorizon = 2048;
  int64_t tick_px_;
  int horizon_;
  SynthStats s_;
  double spread_sum_ = 0, touch_sum_ = 0, touch_ct_sum_ = 0;
  uint64_t spread_one_ = 0, spread_n_ = 0;
  int64_t prev_mid2_ = 0, first_mid2_ = 0;  // bid0 + ask0 in ticks (twice the mid)
  bool have_mid_ = false;
  // Ring of (imbalance, mid2) for the last horizon records; correlation sums.
  double ring_imb_[kMaxHorizon] = {};
  int64_t ring_mid2_[kMaxHorizon] = {};
  bool ring_ok_[kMaxHorizon] = {};
  // Cumulative signed traded lots of the last 2 * horizon records.
  int64_t ring_flow_[2 * kMaxHorizon] = {};
  int64_t cum_flow_ = 0;
  double fx_ = 0, fy_ = 0, fxx_ = 0, fyy_ = 0, fxy_ = 0;
  uint64_t f_pairs_ = 0;
  double sx_ = 0, sy_ = 0, sxx_ = 0, syy_ = 0, sxy_ = 0;
  uint64_t n_pairs_ = 0, hits_ = 0, moves_ = 0;
};

// Every field of a SynthConfig, so a run can be regenerated exactly (the oracle,
// data/synth_oracle.h). from_json checks the result with SynthMarket::validate.
nlohmann::json synth_config_to_json(const SynthConfig& c);
Result<SynthConfig> synth_config_from_json(const nlohmann::json& j, const std::string& where);

// The latent state after an event: what no snapshot shows directly (docs/SYNTH.md).
struct SynthLatent {
  double drift = 0;           // the OU order-flow drift x
  int regime = 1;             // the momentum regime r (+1 persist, -1 fade)
  double momentum_ticks = 0;  // m, the mid's recent move the regime acts on
  int activity = 0;           // the activity regime a (0 quiet, 1 active; 0 when off)
  int response = 0;           // the response regime b (+1 / -1; 0 when off)
  int meta = 0;  // the meta-order: d = +1 / -1 accumulating, +2 / -2 revealing, 0 none (or off)
};

// The generator. next() advances the simulation by one event and returns its record, valid
// until the next call. Allocates nothing per event. Copyable: a copy continues the same
// stream, and reseed() then branches it (Monte Carlo continuations from an exact state).
class SynthMarket {
 public:
  static constexpr int kMaxWindow = 64;

  // Checks the config's ranges (UsageError naming the field).
  static Status validate(const SynthConfig& config);
  // `config` must pass validate().
  explicit SynthMarket(const SynthConfig& config);

  const dbn::Mbp10Msg& next();

  uint64_t events() const { return events_; }
  // Book state in ticks (price / tick_px) and lots, for tests.
  int64_t best_bid_ticks() const { return side_[kBid].best; }
  int64_t best_ask_ticks() const { return side_[kAsk].best; }
  double drift() const { return drift_x_; }
  SynthLatent latent() const {
    return {drift_x_, regime_, momentum_ticks_, activity_, response_, meta_};
  }
  // Twice the mid in ticks (best bid + best ask).
  int64_t mid_2ticks() const { return side_[kBid].best + side_[kAsk].best; }
  // Replaces the random stream (a branch of this state for Monte Carlo).
  void reseed(uint64_t seed) { rng_ = Rng(seed); }

  // The instrument definition record written first, and the file metadata for a run whose
  // records span [start_ts_ns, end_ts_ns).
  dbn::InstrumentDef definition() const;
  dbn::Metadata metadata(uint64_t end_ts_ns) const;

 private:
  enum SideIx { kBid = 0, kAsk = 1 };
  struct Side {
    int64_t best = 0;  // best price in ticks
    int64_t dir = 0;   // -1 bid (level k at best - k), +1 ask (best + k)
    uint32_t sz[kMaxWindow];
    uint32_t ct[kMaxWindow];
    uint64_t deep_ct = 0;  // orders on active levels [1, active_levels)
    int64_t px(int k) const { return best + dir * k; }
  };

  uint64_t rand_u64();   // core/random.h's xoshiro256**
  double rand_unit();    // [0, 1)
  double rand_exp();     // Exp(1)
  double rand_normal();  // approximately N(0, 1): Irwin-Hall of four 16-bit uniforms
  uint32_t draw_size(double mean);

  void update_drift(double dt_s);
  void refill(Side& s, int k);
  void recount_deep(Side& s);
  void shift_away(Side& s);  // touch depleted: the next non-empty level becomes the touch
  void improve(Side& s, int ticks, uint32_t size);
  int visible_index(const Side& s, int k) const;  // non-empty levels strictly better than k
  void remove_order(Side& s, int k, uint32_t* removed);
  void fill_levels();

  SynthConfig cfg_;
  Rng rng_;
  Side side_[2];
  double deep_add_cdf_[kMaxWindow];
  double elapsed_ns_ = 0;
  uint64_t last_recv_ns_ = 0;
  uint64_t events_ = 0;
  double drift_x_ = 0, drift_dt_s_ = 0;
  int regime_ = 1;               // the momentum regime r
  double momentum_ticks_ = 0;    // m: the mid's recent move, ticks
  int activity_ = 0;             // the activity regime a (0 quiet, 1 active)
  int response_ = 0;             // the response regime b (+1 / -1; 0 when off)
  int meta_ = 0;                 // the meta-order: ±1 accumulating, ±2 revealing, 0 none
  int64_t last_mid_2ticks_ = 0;  // best bid + best ask at the last update (2 x mid in ticks)
  double f_add_[2] = {1, 1}, f_cancel_[2] = {1, 1}, f_market_[2] = {1, 1};
  dbn::Mbp10Msg msg_{};
};

// Generates config.events events into `out_path` (zstd when it ends in ".zst"): metadata,
// one definition record, then the mbp-10 records. Runs the generator twice (the first pass
// only finds the end timestamp for the metadata); `progress`, whose total should be
// config.events, advances by half an event per event of each pass. `stats` may be null.
// With `latent`, also writes out_path + ".latent" (the latent sidecar, format below) and
// out_path + ".synth.json" (synth_config_to_json: what `fxt eval --oracle` regenerates from).
Status synthesize_market(const SynthConfig& config, const std::string& out_path, SynthStats* stats,
                         Progress* progress = nullptr, bool latent = false);

// A run's statistics as `fxt synth --json` prints them (without the wall time).
nlohmann::json synth_stats_json(const std::string& out_path, const SynthStats& s);

// The latent sidecar: magic "FXTLATNT", u32 version 4, u32 record bytes 24, u64 events, then per
// event (in record order, event i = snapshot i of the ingested store) f32 drift, f32
// momentum_ticks, i32 regime, i32 activity, i32 response, i32 meta; little-endian. Written
// atomically. Version 3 files (20-byte records, no meta) read with meta 0, version 2 (16-byte
// records, no response) with response 0 too, version 1 (12-byte records) with activity 0 too.
Result<std::vector<SynthLatent>> read_latent_sidecar(const std::string& path);

}  // namespace fxt
