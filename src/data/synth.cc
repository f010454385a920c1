#include "data/synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "data/book.h"

namespace fxt {
namespace {

constexpr int kDriftEveryEvents = 16;  // the OU drift and its factors are refreshed this often
constexpr uint32_t kMaxDrawLots = 1'000'000;

// Event kinds; the order is part of the generator's definition (it fixes which uniform draw
// selects which kind), so changing it changes every file.
enum Kind : int {
  kAddTouchBid,
  kAddTouchAsk,
  kCancelTouchBid,
  kCancelTouchAsk,
  kAddDeepBid,
  kAddDeepAsk,
  kCancelDeepBid,
  kCancelDeepAsk,
  kMarketBuy,
  kMarketSell,
  kInsideBid,
  kInsideAsk,
  kMetaClip,  // last: at rate 0 (no meta-order) the choice among the others is unchanged
  kNumKinds,
};

// Days since 1970-01-01 -> YYYYMMDD.
uint32_t yyyymmdd_from_days(int64_t days) {
  const CivilDate d = civil_from_days(days);
  return static_cast<uint32_t>(d.year * 10000 + d.month * 100 + d.day);
}

constexpr int64_t kNsPerDay = 86'400'000'000'000;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// ---- MarketStatsCollector ------------------------------------------------------------------

MarketStatsCollector::MarketStatsCollector(int64_t tick_px, int horizon)
    : tick_px_(tick_px), horizon_(std::clamp(horizon, 1, kMaxHorizon)) {
  s_.horizon = horizon_;
}

void MarketStatsCollector::observe(const dbn::Mbp10Msg& m) {
  const uint64_t n = s_.events++;
  if (n == 0) s_.first_ts_ns = m.hd.ts_event;
  s_.last_ts_ns = m.hd.ts_event;
  switch (m.action) {
    case 'A':
      ++s_.adds;
      break;
    case 'C':
      ++s_.cancels;
      break;
    case 'T':
      ++s_.trades;
      s_.traded_lots += m.size;
      cum_flow_ += m.side == 'B' ? int64_t{m.size} : -int64_t{m.size};
      break;
    default:
      break;
  }
  // Flow ring: slot of record n holds the cumulative signed lots up to and including it.
  const auto h = static_cast<uint64_t>(horizon_);
  const int flow_slot = static_cast<int>(n % (2 * h));
  const int64_t flow_2h_ago = ring_flow_[flow_slot];  // record n - 2h, when n >= 2h
  const int64_t flow_h_ago = ring_flow_[(n + h) % (2 * h)];
  ring_flow_[flow_slot] = cum_flow_;
  if ((m.flags & dbn::kFLast) == 0) ++s_.not_last;
  if (m.price % tick_px_ != 0) ++s_.off_grid;

  // Level shape: non-empty levels first, on the grid, strictly ordered, positive sizes.
  bool bid_gap = false, ask_gap = false;
  for (int i = 0; i < kBookLevels; ++i) {
    const dbn::BidAskPair& l = m.levels[i];
    if (l.bid_px == kEmptyPx) {
      bid_gap = true;
    } else {
      if (l.bid_px % tick_px_ != 0) ++s_.off_grid;
      if (bid_gap || l.bid_sz == 0 || l.bid_ct == 0 || l.bid_ct > l.bid_sz ||
          (i > 0 && l.bid_px >= m.levels[i - 1].bid_px)) {
        ++s_.bad_levels;
      }
    }
    if (l.ask_px == kEmptyPx) {
      ask_gap = true;
    } else {
      if (l.ask_px % tick_px_ != 0) ++s_.off_grid;
      if (ask_gap || l.ask_sz == 0 || l.ask_ct == 0 || l.ask_ct > l.ask_sz ||
          (i > 0 && l.ask_px <= m.levels[i - 1].ask_px)) {
        ++s_.bad_levels;
      }
    }
  }

  const dbn::BidAskPair& top = m.levels[0];
  const int ring = static_cast<int>(n % h);
  if (top.bid_px == kEmptyPx || top.ask_px == kEmptyPx) {
    ring_ok_[ring] = false;
    return;
  }
  const int64_t spread = (top.ask_px - top.bid_px) / tick_px_;
  if (spread <= 0) ++s_.crossed_or_locked;
  spread_sum_ += static_cast<double>(spread);
  ++spread_n_;
  if (spread == 1) ++spread_one_;
  s_.max_spread_ticks = std::max(s_.max_spread_ticks, spread);
  touch_sum_ += 0.5 * (static_cast<double>(top.bid_sz) + static_cast<double>(top.ask_sz));
  touch_ct_sum_ += 0.5 * (static_cast<double>(top.bid_ct) + static_cast<double>(top.ask_ct));

  const int64_t mid2 = top.bid_px / tick_px_ + top.ask_px / tick_px_;
  if (!have_mid_) {
    have_mid_ = true;
    first_mid2_ = prev_mid2_ = mid2;
    s_.mid_min_px = s_.mid_max_px = (top.bid_px + top.ask_px) / 2;
  } else if (mid2 != prev_mid2_) {
    ++s_.mid_moves;
    prev_mid2_ = mid2;
  }
  s_.mid_min_px = std::min(s_.mid_min_px, (top.bid_px + top.ask_px) / 2);
  s_.mid_max_px = std::max(s_.mid_max_px, (top.bid_px + top.ask_px) / 2);
  s_.net_mid_ticks = (mid2 - first_mid2_) / 2;

  const double bsz = top.bid_sz, asz = top.ask_sz;
  const double imb = (bsz - asz) / (bsz + asz);
  if (n >= static_cast<uint64_t>(horizon_) && ring_ok_[ring]) {
    const double x = ring_imb_[ring];
    const double y = static_cast<double>(mid2 - ring_mid2_[ring]);
    sx_ += x;
    sy_ += y;
    sxx_ += x * x;
    syy_ += y * y;
    sxy_ += x * y;
    ++n_pairs_;
    if (y != 0 && x != 0) {
      ++moves_;
      if ((x > 0) == (y > 0)) ++hits_;
    }
    if (n >= 2 * h) {
      const auto f = static_cast<double>(flow_h_ago - flow_2h_ago);
      fx_ += f;
      fy_ += y;
      fxx_ += f * f;
      fyy_ += y * y;
      fxy_ += f * y;
      ++f_pairs_;
    }
  }
  ring_imb_[ring] = imb;
  ring_mid2_[ring] = mid2;
  ring_ok_[ring] = true;
}

SynthStats MarketStatsCollector::finish() const {
  SynthStats s = s_;
  if (spread_n_ > 0) {
    const auto n = static_cast<double>(spread_n_);
    s.mean_spread_ticks = spread_sum_ / n;
    s.spread_one_tick_frac = static_cast<double>(spread_one_) / n;
    s.mean_touch_lots = touch_sum_ / n;
    s.mean_touch_orders = touch_ct_sum_ / n;
  }
  s.mid_range_ticks =
      static_cast<double>(s.mid_max_px - s.mid_min_px) / static_cast<double>(tick_px_);
  if (n_pairs_ > 1) {
    const auto n = static_cast<double>(n_pairs_);
    const double cov = sxy_ - sx_ * sy_ / n;
    const double vx = sxx_ - sx_ * sx_ / n, vy = syy_ - sy_ * sy_ / n;
    if (vx > 0 && vy > 0) s.imbalance_corr = cov / std::sqrt(vx * vy);
  }
  if (f_pairs_ > 1) {
    const auto n = static_cast<double>(f_pairs_);
    const double cov = fxy_ - fx_ * fy_ / n;
    const double vx = fxx_ - fx_ * fx_ / n, vy = fyy_ - fy_ * fy_ / n;
    if (vx > 0 && vy > 0) s.flow_corr = cov / std::sqrt(vx * vy);
  }
  if (moves_ > 0) s.imbalance_hit_rate = static_cast<double>(hits_) / static_cast<double>(moves_);
  if (s.events > 1) {
    s.mean_interarrival_ns =
        static_cast<double>(s.last_ts_ns - s.first_ts_ns) / static_cast<double>(s.events - 1);
  }
  return s;
}

// ---- SynthMarket: configuration -----------------------------------------------------------

Status SynthMarket::validate(const SynthConfig& c) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  auto non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  if (c.tick_px <= 0) return UsageError("synth: tick_px must be > 0, got {}", c.tick_px);
  if (c.window_levels < 20 || c.window_levels > kMaxWindow) {
    return UsageError("synth: window_levels must be in [20, {}], got {}", kMaxWindow,
                      c.window_levels);
  }
  if (c.active_levels < 2 || c.active_levels > c.window_levels) {
    return UsageError("synth: active_levels must be in [2, window_levels], got {}",
                      c.active_levels);
  }
  // The price floor (docs/SYNTH.md) needs room below the start and prices must fit int64.
  if (c.start_px / c.tick_px < 4 * static_cast<int64_t>(c.window_levels) ||
      c.start_px / c.tick_px > (int64_t{1} << 40)) {
    return UsageError("synth: start_px must be between {} and 2^40 ticks, got {} ticks",
                      4 * c.window_levels, c.start_px / c.tick_px);
  }
  if (c.start_ts_ns < 0) return UsageError("synth: start_ts_ns must be >= 0");
  if (c.symbol.empty() || c.symbol.size() > 70) {
    return UsageError("synth: symbol must have 1..70 characters, got '{}'", c.symbol);
  }
  if (c.dataset.empty() || c.dataset.size() > 15) {
    return UsageError("synth: dataset must have 1..15 characters, got '{}'", c.dataset);
  }
  if (!(c.limit_size_mean >= 1) || !(c.market_size_mean >= 1) || !(c.refill_orders_mean >= 1) ||
      c.limit_size_mean > 1e4 || c.market_size_mean > 1e4 || c.refill_orders_mean > 1e3) {
    return UsageError("synth: size means must be in [1, 1e4] (refill orders [1, 1e3])");
  }
  if (!positive(c.touch_add_rate) || !positive(c.touch_add_half_lots) ||
      !positive(c.touch_cancel_rate) || !positive(c.deep_add_rate) ||
      !non_negative(c.deep_add_decay) || !positive(c.deep_cancel_rate) ||
      !positive(c.market_rate) || !positive(c.inside_add_rate)) {
    return UsageError("synth: intensities must be finite and > 0 (deep_add_decay >= 0)");
  }
  if (!(c.sweep_prob >= 0 && c.sweep_prob <= 1)) {
    return UsageError("synth: sweep_prob must be in [0, 1], got {}", c.sweep_prob);
  }
  if (!(c.market_imbalance_beta >= 0 && c.market_imbalance_beta < 1)) {
    return UsageError("synth: market_imbalance_beta must be in [0, 1), got {}",
                      c.market_imbalance_beta);
  }
  if (!positive(c.drift_tau_s) || !non_negative(c.drift_sigma) || c.drift_sigma > 10 ||
      !non_negative(c.drift_market_skew) || c.drift_market_skew > 5 ||
      !non_negative(c.drift_book_skew) || c.drift_book_skew > 5) {
    return UsageError("synth: drift_tau_s must be > 0, drift_sigma in [0, 10], skews in [0, 5]");
  }
  if (!positive(c.regime_tau_s) || !positive(c.momentum_halflife_s) ||
      !non_negative(c.momentum_skew) || c.momentum_skew > 5) {
    return UsageError(
        "synth: regime_tau_s and momentum_halflife_s must be > 0, momentum_skew in [0, 5]");
  }
  if (!positive(c.activity_quiet_s) || !positive(c.activity_active_s) ||
      !(c.activity_speed >= 1 && c.activity_speed <= 10) || !non_negative(c.activity_quiet_gain) ||
      c.activity_quiet_gain > 10 || !non_negative(c.activity_active_gain) ||
      c.activity_active_gain > 10) {
    return UsageError(
        "synth: activity_quiet_s and activity_active_s must be > 0, activity_speed in [1, 10], "
        "activity gains in [0, 10]");
  }
  if (!non_negative(c.response_regime_s) || c.response_regime_s > 1e6 ||
      !(c.response_regime_beta > -1 && c.response_regime_beta < 1) ||
      !non_negative(c.response_cancel_skew) || c.response_cancel_skew > 5) {
    return UsageError(
        "synth: response_regime_s must be in [0, 1e6] (0: off), response_regime_beta in (-1, 1), "
        "response_cancel_skew in [0, 5]");
  }
  if (!non_negative(c.meta_gap_s) || c.meta_gap_s > 1e6 || !positive(c.meta_life_s) ||
      c.meta_life_s > 1e6 || !positive(c.meta_reveal_s) || c.meta_reveal_s > 1e6 ||
      !non_negative(c.meta_clip_rate) || c.meta_clip_rate > 1000 || c.meta_clip_lots < 1 ||
      c.meta_clip_lots > kMaxDrawLots || !non_negative(c.meta_skew) || c.meta_skew > 5) {
    return UsageError(
        "synth: meta_gap_s must be in [0, 1e6] (0: off), meta_life_s and meta_reveal_s in "
        "(0, 1e6], meta_clip_rate in [0, 1000], meta_clip_lots >= 1, meta_skew in [0, 5]");
  }
  if (!non_negative(c.feed_latency_min_ns) || !non_negative(c.feed_latency_extra_ns) ||
      c.feed_latency_min_ns + 20 * c.feed_latency_extra_ns > 1e9) {
    return UsageError("synth: feed latencies must be >= 0 and well under a second");
  }
  return Status::Ok();
}

SynthMarket::SynthMarket(const SynthConfig& config) : cfg_(config), rng_(config.seed) {
  assert(validate(config).ok());

  // Cumulative weights of deep adds over active levels 1..active-1.
  double total = 0;
  for (int k = 1; k < cfg_.active_levels; ++k) {
    total += std::exp(-cfg_.deep_add_decay * (k - 1));
    deep_add_cdf_[k] = total;
  }
  for (int k = 1; k < cfg_.active_levels; ++k) deep_add_cdf_[k] /= total;

  const int64_t bid0 = (cfg_.start_px + cfg_.tick_px / 2) / cfg_.tick_px;
  side_[kBid].best = bid0;
  side_[kBid].dir = -1;
  side_[kAsk].best = bid0 + 1;
  side_[kAsk].dir = +1;
  for (Side& s : side_) {
    std::memset(s.sz, 0, sizeof(s.sz));
    std::memset(s.ct, 0, sizeof(s.ct));
    for (int k = 0; k < cfg_.window_levels; ++k) refill(s, k);
    recount_deep(s);
  }
  // Start the drift from its stationary law so seeds differ in regime from the first event.
  drift_x_ = cfg_.drift_sigma * rand_normal();
  regime_ = rand_unit() < 0.5 ? 1 : -1;
  // The activity regime starts from its stationary law: active with probability
  // active / (quiet + active) of the mean lives.
  if (cfg_.activity_on()) {
    const double lives = cfg_.activity_quiet_s + cfg_.activity_active_s;
    activity_ = rand_unit() * lives < cfg_.activity_active_s ? 1 : 0;
  }
  if (cfg_.response_on()) response_ = rand_unit() < 0.5 ? 1 : -1;
  last_mid_2ticks_ = side_[kBid].best + side_[kAsk].best;
  update_drift(0.0);
  last_recv_ns_ = static_cast<uint64_t>(cfg_.start_ts_ns);
}

dbn::InstrumentDef SynthMarket::definition() const {
  dbn::InstrumentDef d;
  d.instrument_id = cfg_.instrument_id;
  d.ts_event = d.ts_recv = static_cast<uint64_t>(cfg_.start_ts_ns);
  d.min_price_increment = cfg_.tick_px;
  d.display_factor = 1'000'000'000;
  d.raw_symbol = cfg_.symbol;
  d.currency = "USD";
  d.exchange = "FXT";
  d.asset = cfg_.symbol.substr(0, 6);
  d.security_type = "FUT";
  d.instrument_class = 'F';
  return d;
}

dbn::Metadata SynthMarket::metadata(uint64_t end_ts_ns) const {
  dbn::Metadata m;
  m.version = 3;
  m.dataset = cfg_.dataset;
  m.schema = dbn::Schema::kMbp10;
  m.start = static_cast<uint64_t>(cfg_.start_ts_ns);
  m.end = std::max(end_ts_ns, m.start);
  m.limit = 0;
  m.stype_in = 1;   // raw_symbol
  m.stype_out = 0;  // instrument_id
  m.symbols = {cfg_.symbol};
  dbn::SymbolMapping map;
  map.raw_symbol = cfg_.symbol;
  const auto start_day = static_cast<int64_t>(m.start) / kNsPerDay;
  const auto end_day = (static_cast<int64_t>(m.end) + kNsPerDay - 1) / kNsPerDay;
  map.intervals.push_back({yyyymmdd_from_days(start_day),
                           yyyymmdd_from_days(std::max(end_day, start_day + 1)),
                           std::to_string(cfg_.instrument_id)});
  m.mappings.push_back(std::move(map));
  return m;
}

// ---- SynthMarket: random numbers ---------------------------------------------------------

uint64_t SynthMarket::rand_u64() {
  return rng_.next();
}

double SynthMarket::rand_unit() {
  return rng_.unit();
}

double SynthMarket::rand_exp() {
  return -std::log(1.0 - rand_unit());
}

double SynthMarket::rand_normal() {
  const uint64_t r = rand_u64();
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += static_cast<double>((r >> (16 * i)) & 0xFFFF) + 0.5;
  return (sum * (1.0 / 65536.0) - 2.0) * 1.7320508075688772;  // variance 4/12 -> 1
}

uint32_t SynthMarket::draw_size(double mean) {
  const double extra = rand_exp() * (mean - 1.0);
  return 1 + static_cast<uint32_t>(std::min(extra, static_cast<double>(kMaxDrawLots)));
}

// ---- SynthMarket: book mechanics ---------------------------------------------------------

void SynthMarket::update_drift(double dt_s) {
  const double decay = std::exp(-dt_s / cfg_.drift_tau_s);
  drift_x_ = drift_x_ * decay + cfg_.drift_sigma * std::sqrt(1.0 - decay * decay) * rand_normal();
  // The momentum regime: flip with probability 1 - exp(-dt / tau), forget, add the mid's move.
  if (dt_s > 0 && rand_unit() < -std::expm1(-dt_s / cfg_.regime_tau_s)) regime_ = -regime_;
  // The activity regime: leave the current spell with probability 1 - exp(-dt / its mean life).
  double gain = 1.0;
  if (cfg_.activity_on()) {
    const double spell_s = activity_ != 0 ? cfg_.activity_active_s : cfg_.activity_quiet_s;
    if (dt_s > 0 && rand_unit() < -std::expm1(-dt_s / spell_s)) activity_ = 1 - activity_;
    gain = activity_ != 0 ? cfg_.activity_active_gain : cfg_.activity_quiet_gain;
  }
  // The response regime: flip with probability 1 - exp(-dt / its mean life).
  if (cfg_.response_on() && dt_s > 0 && rand_unit() < -std::expm1(-dt_s / cfg_.response_regime_s))
    response_ = -response_;
  // The meta-order: one starts (a random side), accumulation ends in the reveal, the reveal ends.
  if (cfg_.meta_on() && dt_s > 0) {
    const double life = meta_ == 0             ? cfg_.meta_gap_s
                        : std::abs(meta_) == 1 ? cfg_.meta_life_s
                                               : cfg_.meta_reveal_s;
    if (rand_unit() < -std::expm1(-dt_s / life)) {
      if (meta_ == 0) {
        meta_ = rand_unit() < 0.5 ? 1 : -1;
      } else {
        meta_ = std::abs(meta_) == 1 ? 2 * meta_ : 0;
      }
    }
  }
  const int64_t mid_2ticks = side_[kBid].best + side_[kAsk].best;
  momentum_ticks_ = momentum_ticks_ * std::exp2(-dt_s / cfg_.momentum_halflife_s) +
                    0.5 * static_cast<double>(mid_2ticks - last_mid_2ticks_);
  last_mid_2ticks_ = mid_2ticks;
  const double lean = std::abs(meta_) == 2 ? cfg_.meta_skew * (meta_ / 2) : 0.0;  // the reveal
  const double book = std::exp(gain * cfg_.drift_book_skew * drift_x_ + 0.5 * lean);
  const double mkt = std::exp(gain * cfg_.drift_market_skew * drift_x_ +
                              cfg_.momentum_skew * regime_ * std::tanh(momentum_ticks_) + lean);
  f_add_[kBid] = book;
  f_add_[kAsk] = 1.0 / book;
  f_cancel_[kBid] = 1.0 / book;
  f_cancel_[kAsk] = book;
  f_market_[0] = mkt;        // buys
  f_market_[1] = 1.0 / mkt;  // sells
}

void SynthMarket::refill(Side& s, int k) {
  if (s.px(k) <= 0) {
    s.sz[k] = s.ct[k] = 0;
    return;
  }
  const uint32_t orders = draw_size(cfg_.refill_orders_mean);
  // Lots per order uniform in [1, 2 * limit_size_mean - 1]: mean limit_size_mean.
  const double per_order = 1.0 + rand_unit() * 2.0 * (cfg_.limit_size_mean - 1.0);
  s.ct[k] = orders;
  s.sz[k] = static_cast<uint32_t>(orders * per_order);
}

void SynthMarket::recount_deep(Side& s) {
  uint64_t n = 0;
  for (int k = 1; k < cfg_.active_levels; ++k) n += s.ct[k];
  s.deep_ct = n;
}

void SynthMarket::shift_away(Side& s) {
  const int w = cfg_.window_levels;
  do {
    std::memmove(s.sz, s.sz + 1, sizeof(uint32_t) * static_cast<size_t>(w - 1));
    std::memmove(s.ct, s.ct + 1, sizeof(uint32_t) * static_cast<size_t>(w - 1));
    s.best += s.dir;
    refill(s, w - 1);
  } while (s.sz[0] == 0);
  recount_deep(s);
}

void SynthMarket::improve(Side& s, int ticks, uint32_t size) {
  const int w = cfg_.window_levels;
  std::memmove(s.sz + ticks, s.sz, sizeof(uint32_t) * static_cast<size_t>(w - ticks));
  std::memmove(s.ct + ticks, s.ct, sizeof(uint32_t) * static_cast<size_t>(w - ticks));
  for (int k = 1; k < ticks; ++k) s.sz[k] = s.ct[k] = 0;
  s.sz[0] = size;
  s.ct[0] = 1;
  s.best -= s.dir * ticks;
  recount_deep(s);
}

int SynthMarket::visible_index(const Side& s, int k) const {
  int n = 0;
  for (int j = 0; j < k; ++j) n += s.sz[j] != 0;
  return n;
}

// Cancels one resting order at level k: the last order takes the whole queue; otherwise a
// limit-size draw, leaving at least one lot per remaining order.
void SynthMarket::remove_order(Side& s, int k, uint32_t* removed) {
  uint32_t r = s.sz[k];
  if (s.ct[k] > 1) r = std::min(draw_size(cfg_.limit_size_mean), s.sz[k] - (s.ct[k] - 1));
  s.sz[k] -= r;
  s.ct[k] -= 1;
  if (k > 0 && k < cfg_.active_levels) s.deep_ct -= 1;
  *removed = r;
}

void SynthMarket::fill_levels() {
  for (int si = 0; si < 2; ++si) {
    const Side& s = side_[si];
    int64_t px[kBookLevels];
    uint32_t sz[kBookLevels], ct[kBookLevels];
    int n = 0;
    for (int k = 0; k < cfg_.window_levels && n < kBookLevels; ++k) {
      if (s.sz[k] == 0) continue;
      px[n] = s.px(k) * cfg_.tick_px;
      sz[n] = s.sz[k];
      ct[n++] = s.ct[k];
    }
    for (; n < kBookLevels; ++n) {
      px[n] = kEmptyPx;
      sz[n] = ct[n] = 0;
    }
    for (int i = 0; i < kBookLevels; ++i) {
      dbn::BidAskPair& l = msg_.levels[i];
      if (si == kBid) {
        l.bid_px = px[i];
        l.bid_sz = sz[i];
        l.bid_ct = ct[i];
      } else {
        l.ask_px = px[i];
        l.ask_sz = sz[i];
        l.ask_ct = ct[i];
      }
    }
  }
}

// ---- SynthMarket: one event --------------------------------------------------------------

const dbn::Mbp10Msg& SynthMarket::next() {
  Side& bid = side_[kBid];
  Side& ask = side_[kAsk];
  const double qb = bid.sz[0], qa = ask.sz[0];
  const double imb = (qb - qa) / (qb + qa);
  const int64_t spread = ask.best - bid.best;
  // Soft price floor: near zero the bid touch is neither cancelled nor hit, so it cannot fall.
  const bool at_floor = bid.best <= cfg_.window_levels;
  const double beta = response_ < 0 ? cfg_.response_regime_beta : cfg_.market_imbalance_beta;

  double rate[kNumKinds];
  rate[kAddTouchBid] = cfg_.touch_add_rate / (1.0 + qb / cfg_.touch_add_half_lots) * f_add_[kBid];
  rate[kAddTouchAsk] = cfg_.touch_add_rate / (1.0 + qa / cfg_.touch_add_half_lots) * f_add_[kAsk];
  // The response regime's pull of touch orders (none while it is off).
  const double pull = response_ != 0 ? std::exp(cfg_.response_cancel_skew * response_ * imb) : 1.0;
  rate[kCancelTouchBid] =
      at_floor ? 0.0 : cfg_.touch_cancel_rate * bid.ct[0] * f_cancel_[kBid] / pull;
  rate[kCancelTouchAsk] = cfg_.touch_cancel_rate * ask.ct[0] * f_cancel_[kAsk] * pull;
  rate[kAddDeepBid] = cfg_.deep_add_rate * f_add_[kBid];
  rate[kAddDeepAsk] = cfg_.deep_add_rate * f_add_[kAsk];
  rate[kCancelDeepBid] = cfg_.deep_cancel_rate * static_cast<double>(bid.deep_ct) * f_cancel_[kBid];
  rate[kCancelDeepAsk] = cfg_.deep_cancel_rate * static_cast<double>(ask.deep_ct) * f_cancel_[kAsk];
  rate[kMarketBuy] = cfg_.market_rate * (1.0 + beta * imb) * f_market_[0];
  rate[kMarketSell] = at_floor ? 0.0 : cfg_.market_rate * (1.0 - beta * imb) * f_market_[1];
  rate[kInsideBid] = spread > 1 ? cfg_.inside_add_rate * f_add_[kBid] : 0.0;
  rate[kInsideAsk] = spread > 1 ? cfg_.inside_add_rate * f_add_[kAsk] : 0.0;
  rate[kMetaClip] = meta_ == 1 || (meta_ == -1 && !at_floor) ? cfg_.meta_clip_rate : 0.0;
  double total = 0;
  for (double r : rate) total += r;

  // Gillespie step: exponential waiting time at the total intensity, then a kind in proportion.
  // An active spell multiplies every intensity by activity_speed: the same choice, sooner.
  const double speed = activity_ != 0 ? cfg_.activity_speed : 1.0;
  const double dt_s = rand_exp() / (total * speed);
  elapsed_ns_ += dt_s * 1e9;
  drift_dt_s_ += dt_s;
  double u = rand_unit() * total;
  int kind = 0;
  while (kind < kNumKinds - 1 && u >= rate[kind]) u -= rate[kind++];
  while (rate[kind] == 0.0) --kind;  // rounding ran past the end: the last possible kind

  char action = 'A';
  char side_ch = 'N';
  int64_t price_ticks = 0;
  uint32_t size = 0;
  int depth = 0;
  switch (kind) {
    case kAddTouchBid:
    case kAddTouchAsk: {
      Side& s = side_[kind == kAddTouchBid ? kBid : kAsk];
      size = draw_size(cfg_.limit_size_mean);
      s.sz[0] += size;
      s.ct[0] += 1;
      price_ticks = s.best;
      side_ch = kind == kAddTouchBid ? 'B' : 'A';
      break;
    }
    case kCancelTouchBid:
    case kCancelTouchAsk: {
      Side& s = side_[kind == kCancelTouchBid ? kBid : kAsk];
      action = 'C';
      price_ticks = s.best;
      remove_order(s, 0, &size);
      if (s.sz[0] == 0) shift_away(s);
      side_ch = kind == kCancelTouchBid ? 'B' : 'A';
      break;
    }
    case kAddDeepBid:
    case kAddDeepAsk: {
      Side& s = side_[kind == kAddDeepBid ? kBid : kAsk];
      const double v = rand_unit();
      int k = 1;
      while (k < cfg_.active_levels - 1 && v >= deep_add_cdf_[k]) ++k;
      size = draw_size(cfg_.limit_size_mean);
      depth = visible_index(s, k);
      s.sz[k] += size;
      s.ct[k] += 1;
      s.deep_ct += 1;
      price_ticks = s.px(k);
      side_ch = kind == kAddDeepBid ? 'B' : 'A';
      break;
    }
    case kCancelDeepBid:
    case kCancelDeepAsk: {
      Side& s = side_[kind == kCancelDeepBid ? kBid : kAsk];
      // A uniformly chosen resting order among the active deep levels.
      auto target = static_cast<uint64_t>(rand_unit() * static_cast<double>(s.deep_ct));
      int k = 1;
      while (k < cfg_.active_levels - 1 && target >= s.ct[k]) target -= s.ct[k++];
      action = 'C';
      depth = visible_index(s, k);
      price_ticks = s.px(k);
      remove_order(s, k, &size);
      side_ch = kind == kCancelDeepBid ? 'B' : 'A';
      break;
    }
    case kMarketBuy:
    case kMarketSell:
    case kMetaClip: {
      // The aggressor trades against the opposite touch, at most its whole queue; a meta-order
      // clip is exactly meta_clip_lots (capped there) on the meta-order's side.
      const bool buy = kind == kMarketBuy || (kind == kMetaClip && meta_ > 0);
      Side& s = side_[buy ? kAsk : kBid];
      action = 'T';
      side_ch = buy ? 'B' : 'A';
      price_ticks = s.best;
      if (kind == kMetaClip) {
        size = std::min(cfg_.meta_clip_lots, s.sz[0]);
      } else {
        const bool sweep = rand_unit() < cfg_.sweep_prob;
        size = sweep ? s.sz[0] : std::min(draw_size(cfg_.market_size_mean), s.sz[0]);
      }
      const double per_order = static_cast<double>(s.sz[0]) / s.ct[0];
      const auto filled = static_cast<uint32_t>(static_cast<double>(size) / per_order);
      s.sz[0] -= size;
      if (s.sz[0] == 0) {
        s.ct[0] = 0;
        shift_away(s);
      } else {
        s.ct[0] = std::clamp(s.ct[0] - std::min(filled, s.ct[0]), 1u, s.sz[0]);
      }
      break;
    }
    case kInsideBid:
    case kInsideAsk: {
      Side& s = side_[kind == kInsideBid ? kBid : kAsk];
      // Uniform in [1, spread - 1] (capped at the window, which no realistic spread reaches).
      const int ticks =
          std::min(1 + static_cast<int>(rand_unit() * static_cast<double>(spread - 1)),
                   cfg_.window_levels - 1);
      size = draw_size(cfg_.limit_size_mean);
      improve(s, ticks, size);
      price_ticks = s.best;
      side_ch = kind == kInsideBid ? 'B' : 'A';
      break;
    }
    default:
      break;
  }
  ++events_;
  if (events_ % kDriftEveryEvents == 0) {
    update_drift(drift_dt_s_);
    drift_dt_s_ = 0;
  }

  const auto ts_event =
      static_cast<uint64_t>(cfg_.start_ts_ns) + static_cast<uint64_t>(elapsed_ns_);
  const double latency = cfg_.feed_latency_min_ns + rand_exp() * cfg_.feed_latency_extra_ns;
  const uint64_t ts_recv = std::max(last_recv_ns_, ts_event + static_cast<uint64_t>(latency));
  last_recv_ns_ = ts_recv;

  dbn::init_header(&msg_, dbn::kRTypeMbp10, cfg_.publisher_id, cfg_.instrument_id, ts_event);
  msg_.price = price_ticks * cfg_.tick_px;
  msg_.size = size;
  msg_.action = action;
  msg_.side = side_ch;
  msg_.flags = dbn::kFLast;
  msg_.depth = static_cast<uint8_t>(depth);
  msg_.ts_recv = ts_recv;
  msg_.ts_in_delta = static_cast<int32_t>(std::min<uint64_t>(ts_recv - ts_event, INT32_MAX));
  msg_.sequence = static_cast<uint32_t>(events_);
  fill_levels();
  return msg_;
}

// ---- file output ---------------------------------------------------------------------------

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(
    SynthConfig, events, seed, tick_px, start_px, start_ts_ns, symbol, dataset, instrument_id,
    publisher_id, window_levels, active_levels, limit_size_mean, market_size_mean, sweep_prob,
    refill_orders_mean, touch_add_rate, touch_add_half_lots, touch_cancel_rate, deep_add_rate,
    deep_add_decay, deep_cancel_rate, market_rate, market_imbalance_beta, inside_add_rate,
    drift_tau_s, drift_sigma, drift_market_skew, drift_book_skew, regime_tau_s, momentum_halflife_s,
    momentum_skew, activity_quiet_s, activity_active_s, activity_speed, activity_quiet_gain,
    activity_active_gain, response_regime_s, response_regime_beta, response_cancel_skew, meta_gap_s,
    meta_life_s, meta_reveal_s, meta_clip_rate, meta_clip_lots, meta_skew, feed_latency_min_ns,
    feed_latency_extra_ns)

nlohmann::json synth_config_to_json(const SynthConfig& c) {
  return c;
}

Result<SynthConfig> synth_config_from_json(const nlohmann::json& j, const std::string& where) {
  SynthConfig c;
  try {
    // A config written before the activity or response regime or the meta-order existed
    // regenerates without it (the default).
    nlohmann::json full = j;
    if (full.is_object()) {
      const nlohmann::json defaults = c;
      for (const char* key :
           {"activity_quiet_s", "activity_active_s", "activity_speed", "activity_quiet_gain",
            "activity_active_gain", "response_regime_s", "response_regime_beta",
            "response_cancel_skew", "meta_gap_s", "meta_life_s", "meta_reveal_s", "meta_clip_rate",
            "meta_clip_lots", "meta_skew"}) {
        if (!full.contains(key)) full[key] = defaults[key];
      }
    }
    c = full.get<SynthConfig>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: not a synth config: {}", where, e.what());
  }
  if (Status s = SynthMarket::validate(c); !s.ok()) {
    return InvalidInput("{}: {}", where, s.message());
  }
  return c;
}

nlohmann::json synth_stats_json(const std::string& out_path, const SynthStats& s) {
  return {{"out", out_path},
          {"events", s.events},
          {"adds", s.adds},
          {"cancels", s.cancels},
          {"trades", s.trades},
          {"mean_spread_ticks", s.mean_spread_ticks},
          {"mean_touch_lots", s.mean_touch_lots},
          {"mid_range_ticks", s.mid_range_ticks},
          {"imbalance_corr_100", s.imbalance_corr},
          {"first_ts_ns", s.first_ts_ns},
          {"last_ts_ns", s.last_ts_ns}};
}

namespace {
constexpr char kLatentMagic[8] = {'F', 'X', 'T', 'L', 'A', 'T', 'N', 'T'};
constexpr uint32_t kLatentVersion = 4;
struct LatentRecord {
  float drift;
  float momentum_ticks;
  int32_t regime;
  int32_t activity;
  int32_t response;
  int32_t meta;
};
static_assert(sizeof(LatentRecord) == 24);
// Record bytes of each version: 1 without activity, response and meta; 2 without response and
// meta; 3 without meta; 4 (kLatentVersion) all of LatentRecord.
constexpr size_t kLatentRecordBytes[] = {0, 12, 16, 20, sizeof(LatentRecord)};
static_assert(std::size(kLatentRecordBytes) == kLatentVersion + 1);
}  // namespace

Result<std::vector<SynthLatent>> read_latent_sidecar(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string in, read_file(path));
  constexpr size_t kHead = 8 + 4 + 4 + 8;
  if (in.size() < kHead || std::memcmp(in.data(), kLatentMagic, 8) != 0) {
    return InvalidInput("{}: not a latent sidecar (expected magic FXTLATNT at offset 0)", path);
  }
  uint32_t version = 0, bytes = 0;
  uint64_t n = 0;
  std::memcpy(&version, in.data() + 8, 4);
  std::memcpy(&bytes, in.data() + 12, 4);
  std::memcpy(&n, in.data() + 16, 8);
  if (version < 1 || version > kLatentVersion || bytes != kLatentRecordBytes[version]) {
    return InvalidInput(
        "{}: offset 8: version {} with {}-byte records (expected 4 and 24, 3 and 20, 2 and 16, or "
        "1 and 12)",
        path, version, bytes);
  }
  if (n > (uint64_t{1} << 36) || in.size() != kHead + n * bytes) {
    return InvalidInput("{}: {} bytes for {} events (expected {})", path, in.size(), n,
                        kHead + n * bytes);
  }
  std::vector<SynthLatent> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    LatentRecord r{};  // older records leave meta (and response, activity) 0
    std::memcpy(&r, in.data() + kHead + i * bytes, bytes);
    out[i] = {r.drift,
              static_cast<int>(r.regime),
              r.momentum_ticks,
              static_cast<int>(r.activity),
              static_cast<int>(r.response),
              static_cast<int>(r.meta)};
  }
  return out;
}

Status synthesize_market(const SynthConfig& config, const std::string& out_path, SynthStats* stats,
                         Progress* progress, bool with_latent) {
  const std::string latent_path = with_latent ? out_path + ".latent" : "";
  FXT_RETURN_IF_ERROR(SynthMarket::validate(config));
  constexpr uint64_t kProgressEvery = 4096;

  // Pass 1 finds the last timestamp so the metadata's end is exact.
  uint64_t last_ts = static_cast<uint64_t>(config.start_ts_ns);
  {
    SynthMarket timing(config);
    for (uint64_t i = 0; i < config.events; ++i) {
      last_ts = timing.next().hd.ts_event;
      if (progress != nullptr && i % kProgressEvery == 0) progress->set(i / 2);
    }
  }

  SynthMarket market(config);
  dbn::WriterOptions options;
  options.zstd = ends_with(out_path, ".zst");
  // Compression is the bottleneck (368 bytes per event): level 1 on two background threads
  // keeps generation at millions of events per second with ~13x compression.
  options.zstd_level = 1;
  options.zstd_workers = 2;
  FXT_ASSIGN_OR_RETURN(dbn::Writer writer,
                       dbn::Writer::create(out_path, market.metadata(last_ts + 1), options));
  FXT_RETURN_IF_ERROR(writer.write_definition(market.definition()));
  MarketStatsCollector collector(config.tick_px);
  BufferedFileWriter latent;
  if (!latent_path.empty()) {
    FXT_ASSIGN_OR_RETURN(latent, BufferedFileWriter::create(latent_path));
    const uint32_t head[2] = {kLatentVersion, sizeof(LatentRecord)};
    FXT_RETURN_IF_ERROR(latent.write(kLatentMagic, 8));
    FXT_RETURN_IF_ERROR(latent.write(head, sizeof(head)));
    FXT_RETURN_IF_ERROR(latent.write(&config.events, sizeof(config.events)));
  }
  for (uint64_t i = 0; i < config.events; ++i) {
    const dbn::Mbp10Msg& msg = market.next();
    FXT_RETURN_IF_ERROR(writer.write(&msg));
    if (!latent_path.empty()) {
      const SynthLatent l = market.latent();
      const LatentRecord r{static_cast<float>(l.drift),
                           static_cast<float>(l.momentum_ticks),
                           l.regime,
                           l.activity,
                           l.response,
                           l.meta};
      FXT_RETURN_IF_ERROR(latent.write(&r, sizeof(r)));
    }
    if (stats != nullptr) collector.observe(msg);
    if (progress != nullptr && i % kProgressEvery == 0) progress->set((config.events + i) / 2);
  }
  FXT_RETURN_IF_ERROR(writer.close());
  if (with_latent) {
    FXT_RETURN_IF_ERROR(latent.commit());
    FXT_RETURN_IF_ERROR(
        write_file_atomic(out_path + ".synth.json", synth_config_to_json(config).dump(2) + "\n"));
  }
  if (progress != nullptr) progress->set(config.events);
  if (stats != nullptr) *stats = collector.finish();
  return Status::Ok();
}

}  // namespace fxt
