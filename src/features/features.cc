// One pass over a store: book-shape slots from the rows at t and p, flow slots from the
// cumulative trade columns, and EMA state carried snapshot by snapshot.
#include "features/features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include "core/text.h"

namespace fxt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr int64_t kNsPerDay = 86'400'000'000'000;
constexpr int64_t kDtPeriodsNs[4] = {60'000'000'000, 6'000'000'000, 600'000'000, 60'000'000};
constexpr int64_t kNoBid = std::numeric_limits<int64_t>::min();  // bid -inf

// One side of a book row with empty levels normalised: price INT64_MAX or size <= 0
// becomes bid -inf / ask +inf (kNoBid / kEmptyPx) with size 0.
struct Side {
  int64_t px[kBookLevels];
  double sz[kBookLevels];
  int last = -1;  // deepest present level, -1 when the side is empty
  bool present(int i) const { return sz[i] > 0; }
};

void load_side(const int64_t* px, const double* sz, int64_t empty_px, Side* s) {
  s->last = -1;
  for (int i = 0; i < kBookLevels; ++i) {
    bool ok = px[i] != kEmptyPx && sz[i] > 0;  // NaN sizes fail too
    s->px[i] = ok ? px[i] : empty_px;
    s->sz[i] = ok ? sz[i] : 0.0;
    if (ok) s->last = i;
  }
}

struct Book {
  Side bid, ask;
  bool has_mid() const { return bid.present(0) && ask.present(0); }
  // 2 x mid in 1e-9 units (exact); only with has_mid().
  int64_t mid2() const { return bid.px[0] + ask.px[0]; }
};

void load_book(const StoreReader& r, uint64_t t, Book* b) {
  load_side(r.bid_px.row(t), r.bid_sz.row(t), kNoBid, &b->bid);
  load_side(r.ask_px.row(t), r.ask_sz.row(t), kEmptyPx, &b->ask);
}

// Cont-Kukanov-Stoikov order-flow imbalance at level i between `prev` and `cur`.
double ofi(const Book& cur, const Book& prev, int i) {
  double e = 0;
  if (cur.bid.px[i] >= prev.bid.px[i]) e += cur.bid.sz[i];
  if (cur.bid.px[i] <= prev.bid.px[i]) e -= prev.bid.sz[i];
  if (cur.ask.px[i] <= prev.ask.px[i]) e -= cur.ask.sz[i];
  if (cur.ask.px[i] >= prev.ask.px[i]) e += prev.ask.sz[i];
  return e;
}

// log(mid_a / mid_b) x 1e4; NaN unless both mids exist and are positive.
double log_return_bps(const Book& a, const Book& b) {
  if (!a.has_mid() || !b.has_mid()) return kNaN;
  int64_t ma = a.mid2(), mb = b.mid2();
  if (ma <= 0 || mb <= 0) return kNaN;
  return std::log(static_cast<double>(ma) / static_cast<double>(mb)) * 1e4;
}

double imbalance(const Book& b, int levels) {
  double sb = 0, sa = 0;
  for (int i = 0; i < levels; ++i) {
    sb += b.bid.sz[i];
    sa += b.ask.sz[i];
  }
  return sb + sa > 0 ? (sb - sa) / (sb + sa) : kNaN;
}

// EMA with half-life h snapshots; NaN until its first update (m_0 = x_0).
struct Ema {
  double alpha = 0, m = kNaN;
  bool started = false;
  explicit Ema(double half_life) : alpha(1.0 - std::exp2(-1.0 / half_life)) {}
  void update(double x) {
    if (!started) {
      m = x;
      started = true;
    } else {
      m += alpha * (x - m);
    }
  }
};

bool unreliable_ts(uint8_t f) {
  return (f & (kFlagSnapshotRun | kFlagBadTimestamp)) != 0;
}

// Row t's feature k as stored: anything non-finite is undefined (NaN).
template <typename T>
void store_feature(T* row, int k, double v) {
  const T x = static_cast<T>(v);
  row[k] = std::isfinite(x) ? x : std::numeric_limits<T>::quiet_NaN();
}

// Two passes over the rows: the EMAs (20-25, 28-31) and the depth scale need the rows in time
// order; everything else is read off the books at t and p, so the second pass runs on
// config.threads threads over fixed row ranges (the values do not depend on the thread count).
template <typename T>
Status compute(const StoreReader& r, const FeatureConfig& config, std::vector<T>* out) {
  if (config.stride < 1) return UsageError("feature stride must be >= 1 (got {})", config.stride);
  if (r.tick_px() <= 0) {
    return InvalidInput("{}: tick size is {} (need a positive tick to express prices in ticks)",
                        r.dir(), r.tick_px());
  }
  const uint64_t n = r.size();
  const auto stride = static_cast<uint64_t>(config.stride);
  const double tick = static_cast<double>(r.tick_px());
  out->assign(n * kFeatureDim, static_cast<T>(0));

  // Pass 1, in time order: the EMA features and the depth scale d of every row.
  std::vector<double> depth_scale(n);
  {
    Ema depth(1000), spread_ema(100);
    Ema ret_ema[3] = {Ema(10), Ema(100), Ema(1000)};
    Ema absret_ema[3] = {Ema(10), Ema(100), Ema(1000)};
    Ema ofi_ema[3] = {Ema(10), Ema(100), Ema(1000)};
    Book cur, prev1;  // books at t and t-1
    for (uint64_t t = 0; t < n; ++t) {
      load_book(r, t, &cur);
      if (t == 0) prev1 = cur;
      const bool live = (r.flags[t] & (kFlagCrossed | kFlagLocked)) == 0;
      // EMA updates with one-snapshot inputs (t-1 -> t); crossed/locked rows do not update.
      if (live) {
        depth.update((cur.bid.sz[0] + cur.ask.sz[0]) / 2);
        // At the first snapshot the one-snapshot return is 0 (p := t), if the mid exists.
        double r1 = log_return_bps(cur, t == 0 ? cur : prev1);
        if (!std::isnan(r1)) {
          for (int k = 0; k < 3; ++k) {
            ret_ema[k].update(r1);
            absret_ema[k].update(std::fabs(r1));
          }
        }
        if (depth.m > 0) {
          double e1 = (t == 0 ? 0.0 : ofi(cur, prev1, 0)) / depth.m;
          for (auto& e : ofi_ema) e.update(e1);
        }
        if (cur.has_mid()) {
          spread_ema.update(static_cast<double>(cur.ask.px[0] - cur.bid.px[0]) / tick);
        }
      }
      depth_scale[t] = depth.started && depth.m > 0 ? depth.m : kNaN;
      T* row = out->data() + t * kFeatureDim;
      for (int k = 0; k < 3; ++k) {
        store_feature(row, 20 + k, ret_ema[k].m);
        store_feature(row, 23 + k, absret_ema[k].m);
        store_feature(row, 28 + k, ofi_ema[k].m);
      }
      store_feature(row, 31, spread_ema.m);
      prev1 = cur;
    }
  }

  // Pass 2, per row: the features of the books at t and p = t - S.
  auto rows = [&](uint64_t t0, uint64_t t1) {
    Book cur, at_p;
    for (uint64_t t = t0; t < t1; ++t) {
      const uint64_t p = t >= stride ? t - stride : 0;
      load_book(r, t, &cur);
      if (p == t) {
        at_p = cur;
      } else {
        load_book(r, p, &at_p);
      }
      const uint8_t flags = r.flags[t];
      const bool has_mid = cur.has_mid();
      const double spread_ticks =
          has_mid ? static_cast<double>(cur.ask.px[0] - cur.bid.px[0]) / tick : kNaN;
      const double d = depth_scale[t];

      double f[kFeatureDim];
      f[0] = log_return_bps(cur, at_p);
      f[1] = spread_ticks;
      f[2] = imbalance(cur, 1);
      f[3] = imbalance(cur, 3);
      f[4] = imbalance(cur, 5);
      f[5] = imbalance(cur, 10);
      // microprice - mid = half spread x level-0 imbalance (exact in tick offsets).
      f[6] = has_mid ? spread_ticks / 2 * f[2] : kNaN;
      double e5 = 0;
      for (int i = 0; i < 5; ++i) e5 += ofi(cur, at_p, i);
      f[7] = ofi(cur, at_p, 0) / d;
      f[8] = e5 / d;
      double sb = 0, sa = 0, wb = 0, wa = 0;
      for (int i = 0; i < kBookLevels; ++i) {
        sb += cur.bid.sz[i];
        sa += cur.ask.sz[i];
        if (cur.bid.present(i))
          wb += cur.bid.sz[i] * static_cast<double>(cur.bid.px[0] - cur.bid.px[i]);
        if (cur.ask.present(i))
          wa += cur.ask.sz[i] * static_cast<double>(cur.ask.px[i] - cur.ask.px[0]);
      }
      f[9] = std::log1p(sb) - std::log1p(sa);
      f[10] = sb > 0 ? wb / (tick * sb) : kNaN;
      f[11] = sa > 0 ? wa / (tick * sa) : kNaN;
      f[12] = (r.signed_volume[t] - r.signed_volume[p]) / d;
      f[13] = std::log1p(static_cast<double>(r.cum_trade_count[t] - r.cum_trade_count[p]));
      int64_t dt_ns = r.ts_ns[t] - r.ts_ns[p];
      if (dt_ns < 0 || unreliable_ts(flags) || unreliable_ts(r.flags[p])) dt_ns = 0;
      f[14] = std::log10(static_cast<double>(dt_ns > 1 ? dt_ns : 1)) - 6;
      f[15] = std::fabs(f[0]);
      f[16] = std::log1p(cur.bid.sz[0]) - std::log1p(at_p.bid.sz[0]);
      f[17] = std::log1p(cur.ask.sz[0]) - std::log1p(at_p.ask.sz[0]);
      f[18] = cur.bid.last >= 0
                  ? static_cast<double>(cur.bid.px[0] - cur.bid.px[cur.bid.last]) / (9 * tick)
                  : kNaN;
      f[19] = cur.ask.last >= 0
                  ? static_cast<double>(cur.ask.px[cur.ask.last] - cur.ask.px[0]) / (9 * tick)
                  : kNaN;
      int64_t tod_ns = r.ts_ns[t] % kNsPerDay;
      if (tod_ns < 0) tod_ns += kNsPerDay;
      const double tod = kTwoPi * static_cast<double>(tod_ns) / static_cast<double>(kNsPerDay);
      f[26] = std::sin(tod);
      f[27] = std::cos(tod);
      for (int k = 0; k < 4; ++k) {
        // Reduce modulo the period in integers first: the phase keeps full precision.
        const double ph = kTwoPi * static_cast<double>(dt_ns % kDtPeriodsNs[k]) /
                          static_cast<double>(kDtPeriodsNs[k]);
        f[32 + 2 * k] = std::cos(ph);
        f[33 + 2 * k] = std::sin(ph);
      }
      T* row = out->data() + t * kFeatureDim;
      // Division by an undefined d gives NaN already; anything non-finite is undefined.
      for (int k = 0; k < 20; ++k) store_feature(row, k, f[k]);
      store_feature(row, 26, f[26]);
      store_feature(row, 27, f[27]);
      for (int k = 32; k < kFeatureDim; ++k) store_feature(row, k, f[k]);
    }
  };
  const uint64_t workers = std::clamp<uint64_t>(static_cast<uint64_t>(std::max(config.threads, 1)),
                                                1, std::max<uint64_t>(n / 4096, 1));
  std::vector<std::thread> pool;
  for (uint64_t w = 1; w < workers; ++w)
    pool.emplace_back(rows, n * w / workers, n * (w + 1) / workers);
  rows(0, n / workers);
  for (std::thread& t : pool) t.join();
  return Status::Ok();
}

}  // namespace

const std::array<const char*, kFeatureDim>& feature_names() {
  static const std::array<const char*, kFeatureDim> names = {
      "ret_bps",         "spread_ticks",    "imb_l1",          "imb_l3",       "imb_l5",
      "imb_l10",         "micro_ticks",     "ofi_l1",          "ofi_l5",       "log_depth_ratio",
      "bid_depth_ticks", "ask_depth_ticks", "signed_vol",      "log1p_trades", "log_dt",
      "abs_ret_bps",     "dlog_bsz0",       "dlog_asz0",       "bid_range",    "ask_range",
      "ema10_ret_bps",   "ema100_ret_bps",  "ema1000_ret_bps", "ema10_absret", "ema100_absret",
      "ema1000_absret",  "tod_sin",         "tod_cos",         "ema10_ofi",    "ema100_ofi",
      "ema1000_ofi",     "ema100_spread",   "dt60s_cos",       "dt60s_sin",    "dt6s_cos",
      "dt6s_sin",        "dt600ms_cos",     "dt600ms_sin",     "dt60ms_cos",   "dt60ms_sin"};
  return names;
}

Status compute_features(const StoreReader& store, const FeatureConfig& config,
                        std::vector<float>* out) {
  return compute<float>(store, config, out);
}

Status compute_features_f64(const StoreReader& store, const FeatureConfig& config,
                            std::vector<double>* out) {
  return compute<double>(store, config, out);
}

void FeatureStatsAccumulator::add(const float* rows, uint64_t begin, uint64_t end) {
  for (uint64_t t = begin; t < end; ++t) {
    const float* row = rows + t * kFeatureDim;
    for (int k = 0; k < kFeatureDim; ++k) {
      if (!std::isfinite(row[k])) continue;
      const double x = row[k];
      if (count_[k] == 0) shift_[k] = x;
      const double dx = x - shift_[k];
      sum_[k] += dx;
      sum_sq_[k] += dx * dx;
      ++count_[k];
    }
  }
}

FeatureStats FeatureStatsAccumulator::finish() const {
  FeatureStats s;
  for (int k = 0; k < kFeatureDim; ++k) {
    s.count[k] = count_[k];
    s.mean[k] = 0;
    s.stddev[k] = 1;
    if (count_[k] == 0) continue;
    const double c = static_cast<double>(count_[k]);
    const double m = sum_[k] / c;
    s.mean[k] = shift_[k] + m;
    const double var = sum_sq_[k] / c - m * m;
    const double sd = var > 0 ? std::sqrt(var) : 0.0;
    // Tiny relative spreads are rounding noise: treat as constant.
    if (count_[k] >= 2 && sd > 1e-12 * std::max(1.0, std::fabs(s.mean[k]))) s.stddev[k] = sd;
  }
  return s;
}

FeatureStats measure_feature_stats(const float* rows, uint64_t begin, uint64_t end) {
  FeatureStatsAccumulator acc;
  acc.add(rows, begin, end);
  return acc.finish();
}

Result<std::vector<int>> parse_feature_slots(const std::string& text) {
  std::vector<int> slots;
  if (text.empty()) return slots;
  const auto& names = feature_names();
  for (const std::string& item : split_fields(text, ',')) {
    int slot = -1;
    for (int k = 0; k < kFeatureDim; ++k) {
      if (item == names[static_cast<size_t>(k)]) slot = k;
    }
    if (slot < 0) {
      char* end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (!item.empty() && end == item.c_str() + item.size() && v >= 0 && v < kFeatureDim) {
        slot = static_cast<int>(v);
      }
    }
    if (slot < 0) {
      return UsageError(
          "feature '{}': expected a slot 0-{} or a feature name (fxt features "
          "--help lists them)",
          item, kFeatureDim - 1);
    }
    slots.push_back(slot);
  }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

void standardise(const FeatureStats& stats, float* rows, uint64_t n_rows) {
  std::array<double, kFeatureDim> inv;
  for (int k = 0; k < kFeatureDim; ++k) inv[k] = 1.0 / stats.stddev[k];
  for (uint64_t t = 0; t < n_rows; ++t) {
    float* row = rows + t * kFeatureDim;
    for (int k = 0; k < kFeatureDim; ++k) {
      double x = row[k];
      if (!std::isfinite(x) || stats.dropped[k]) {
        row[k] = 0.0f;
        continue;
      }
      x = (x - stats.mean[k]) * inv[k];
      x = x > kFeatureClip ? kFeatureClip : (x < -kFeatureClip ? -kFeatureClip : x);
      row[k] = static_cast<float>(x);
    }
  }
}

}  // namespace fxt
