#include "features/labels.h"

#include <charconv>

#include "core/text.h"

namespace fxt {

Status validate_label_config(const LabelConfig& config) {
  const size_t h = config.horizons.size();
  if (h < 1 || h > kMaxHorizons)
    return UsageError("need 1 to {} label horizons (got {})", kMaxHorizons, h);
  for (int v : config.horizons) {
    if (v < 1) return UsageError("label horizon must be >= 1 snapshot (got {})", v);
  }
  // A repeated horizon would give two p_h<H> columns and one metrics key.
  for (size_t i = 0; i < h; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (config.horizons[i] == config.horizons[j])
        return UsageError("label horizon {} is given twice", config.horizons[i]);
    }
  }
  if (config.min_move_ticks < 0)
    return UsageError("--min-move-ticks must be >= 0 (got {})", config.min_move_ticks);
  return Status::Ok();
}

Status compute_labels(const StoreReader& r, const LabelConfig& config, Labels* out) {
  FXT_RETURN_IF_ERROR(validate_label_config(config));
  if (config.min_move_ticks > 0 && r.tick_px() <= 0)
    return InvalidInput("{}: tick size is {}; --min-move-ticks needs a positive tick", r.dir(),
                        r.tick_px());
  const uint64_t n = r.size();
  const int nh = static_cast<int>(config.horizons.size());
  // 2 x mid, and whether the row has a usable mid (both sides, not crossed or locked).
  std::vector<int64_t> mid2(n);
  std::vector<uint8_t> ok(n);
  for (uint64_t t = 0; t < n; ++t) {
    const int64_t b = r.bid_px.row(t)[0], a = r.ask_px.row(t)[0];
    const bool sides =
        b != kEmptyPx && a != kEmptyPx && r.bid_sz.row(t)[0] > 0 && r.ask_sz.row(t)[0] > 0;
    ok[t] = sides && b < a && (r.flags[t] & (kFlagCrossed | kFlagLocked)) == 0;
    mid2[t] = ok[t] ? b + a : 0;
  }
  // |mid move| >= m ticks  <=>  |2 x mid move| >= 2 m tick (integers).
  const int64_t min_move2 = 2 * config.min_move_ticks * r.tick_px();
  out->horizons = nh;
  out->y.assign(n * nh, 0);
  out->mask.assign(n * nh, 0);
  for (int k = 0; k < nh; ++k) {
    const auto h = static_cast<uint64_t>(config.horizons[k]);
    for (uint64_t t = 0; t + h < n; ++t) {
      if (!ok[t] || !ok[t + h]) continue;
      const int64_t move = mid2[t + h] - mid2[t];
      if (move == 0) continue;
      if (min_move2 > 0 && (move < 0 ? -move : move) < min_move2) continue;
      out->y[t * nh + k] = move > 0 ? 1 : 0;
      out->mask[t * nh + k] = 1;
    }
  }
  return Status::Ok();
}

Result<std::vector<int>> parse_horizons(const std::string& text) {
  std::vector<int> hs;
  for (const std::string& item : split_fields(text, ',')) {
    const char* first = item.data();
    const char* last = item.data() + item.size();
    int v = 0;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last || first == last)
      return UsageError("--horizons '{}': expected comma-separated integers like 30,100,300", text);
    hs.push_back(v);
  }
  LabelConfig c;
  c.horizons = hs;
  FXT_RETURN_IF_ERROR(validate_label_config(c));
  return hs;
}

}  // namespace fxt
