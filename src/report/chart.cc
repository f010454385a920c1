#include "report/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "core/civil_date.h"
#include "report/html.h"

namespace fxt::report {

namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr double kNsPerSecond = 1e9;

// Maps a data interval onto a pixel interval (r0 may exceed r1: the y axis grows upwards).
struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  double operator()(double v) const {
    if (d1 == d0) return 0.5 * (r0 + r1);
    return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
  }
};

struct Tick {
  double value;
  std::string label;
};

// The x axis: piecewise linear through knots (d[i] -> r[i], d increasing). A time axis with
// stretches without data (nights, weekends, a lone early point) gets one piece per stretch of
// data and a narrow fixed-width piece per gap, so a 2-hour session does not sit in a thin
// strip of a 24-hour axis.
struct XScale {
  std::vector<double> d, r;
  std::vector<std::pair<double, double>> gaps;  // (from, to) in data units, collapsed
  double operator()(double v) const {
    if (d.size() < 2 || d.front() == d.back()) return 0.5 * (r.front() + r.back());
    size_t k = std::upper_bound(d.begin(), d.end(), v) - d.begin();
    k = std::clamp<size_t>(k, 1, d.size() - 1);
    const double span = d[k] - d[k - 1];
    if (span <= 0) return r[k];
    return r[k - 1] + (v - d[k - 1]) / span * (r[k] - r[k - 1]);
  }
};

// A gap between consecutive data times is collapsed to kGapPx pixels when it is wider than
// each of: 15 minutes, a tenth of the span, and 20 median steps (sparse but regular data, an
// epoch a minute, is not a gap).
constexpr double kGapShare = 0.1, kMinGapNs = 15 * 60 * 1e9, kGapSteps = 20, kGapPx = 14;

XScale time_scale(std::vector<double> xs, double lo, double hi, double left, double right) {
  XScale s;
  std::sort(xs.begin(), xs.end());
  std::vector<double> steps;
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i] > xs[i - 1]) steps.push_back(xs[i] - xs[i - 1]);
  }
  double median = 0;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    median = steps[steps.size() / 2];
  }
  const double threshold = std::max({kMinGapNs, kGapShare * (hi - lo), kGapSteps * median});
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i] - xs[i - 1] > threshold && xs[i - 1] >= lo && xs[i] <= hi) {
      s.gaps.push_back({xs[i - 1], xs[i]});
    }
  }
  if (s.gaps.empty() || s.gaps.size() > 12) {  // too fragmented: a plain linear axis
    s.gaps.clear();
    s.d = {lo, hi};
    s.r = {left, right};
    return s;
  }
  const double data = (hi - lo) - [&] {
    double g = 0;
    for (const auto& [a, b] : s.gaps) g += b - a;
    return g;
  }();
  const double px_per =
      (right - left - kGapPx * static_cast<double>(s.gaps.size())) / std::max(data, 1.0);
  double at = left;
  s.d.push_back(lo);
  s.r.push_back(left);
  double from = lo;
  for (const auto& [a, b] : s.gaps) {
    at += (a - from) * px_per;
    s.d.push_back(a);
    s.r.push_back(at);
    at += kGapPx;
    s.d.push_back(b);
    s.r.push_back(at);
    from = b;
  }
  s.d.push_back(hi);
  s.r.push_back(right);
  return s;
}

// Labels of linear ticks: as many decimals as the step needs, no "-0".
std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;
  const double a = std::max(std::fabs(v), step);
  if (a >= 1e7) return fmt::format("{:.3g}", v);
  int decimals = 0;
  for (double s = step; decimals < 9 && std::fabs(s - std::round(s)) > 1e-9 * std::max(1.0, s);
       s *= 10) {
    ++decimals;
  }
  return fmt::format("{:.{}f}", v, decimals);
}

std::vector<Tick> linear_ticks(double lo, double hi, int target, bool integer) {
  std::vector<double> values = nice_ticks(lo, hi, target);
  std::vector<Tick> out;
  double step = values.size() > 1 ? values[1] - values[0] : 1;
  if (integer && step < 1) {
    values.clear();
    step = 1;
    for (double v = std::ceil(lo); v <= hi + 1e-9; v += 1) values.push_back(v);
  }
  for (double v : values) {
    if (v < lo - 1e-9 * (hi - lo) || v > hi + 1e-9 * (hi - lo)) continue;
    out.push_back({v, tick_label(v, step)});
  }
  return out;
}

// Ticks at round UTC clock times (seconds to days) inside [lo_ns, hi_ns].
std::vector<Tick> time_ticks(double lo_ns, double hi_ns, int target) {
  static constexpr double kSteps[] = {0.001, 0.002, 0.005, 0.01,      0.02,     0.05, 0.1,  0.2,
                                      0.5,   1,     2,     5,         10,       15,   30,   60,
                                      120,   300,   600,   900,       1800,     3600, 7200, 10800,
                                      21600, 43200, 86400, 2 * 86400, 7 * 86400};
  const double span_s = (hi_ns - lo_ns) / kNsPerSecond;
  double step_s = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps) {
    if (span_s / s <= target) {
      step_s = s;
      break;
    }
  }
  const double step_ns = step_s * kNsPerSecond;
  std::vector<Tick> out;
  for (double t = std::ceil(lo_ns / step_ns) * step_ns; t <= hi_ns && out.size() < 64;
       t += step_ns) {
    const auto ns = static_cast<int64_t>(std::llround(t));
    const int64_t secs = ns >= 0 ? ns / 1'000'000'000 : (ns - 999'999'999) / 1'000'000'000;
    const int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    const int64_t sod = secs - days * 86400;
    const int hh = static_cast<int>(sod / 3600), mm = static_cast<int>(sod / 60 % 60),
              ss = static_cast<int>(sod % 60);
    std::string label;
    if (step_s >= 86400) {
      const CivilDate d = civil_from_days(days);
      label = fmt::format("{:02}-{:02}", d.month, d.day);
    } else if (span_s > 2 * 86400) {
      const CivilDate d = civil_from_days(days);
      label = fmt::format("{:02}-{:02} {:02}:{:02}", d.month, d.day, hh, mm);
    } else if (step_s >= 60) {
      label = fmt::format("{:02}:{:02}", hh, mm);
    } else if (step_s >= 1) {
      label = fmt::format("{:02}:{:02}:{:02}", hh, mm, ss);
    } else {
      const int64_t ms = (ns - secs * 1'000'000'000) / 1'000'000;
      label = fmt::format("{:02}:{:02}:{:02}.{:03}", hh, mm, ss, ms);
    }
    out.push_back({t, std::move(label)});
  }
  return out;
}

// About one x tick per this many pixels of plot width (six on a 580-pixel chart), so a
// zoomed (wider) rendering gets finer ticks.
constexpr double kPxPerXTick = 84;

std::string px(double v) {
  return fmt::format("{:.1f}", v);
}

// Approximate rendered width of 11-12 px sans-serif text (for the legend layout).
double text_width(const std::string& s) {
  return 6.6 * static_cast<double>(s.size());
}

void expand_degenerate(double* lo, double* hi) {
  if (*hi > *lo) return;
  const double pad = *lo == 0 ? 1.0 : 0.1 * std::fabs(*lo);
  *lo -= pad;
  *hi += pad;
}

std::string marker_svg(Marker m, double x, double y, const std::string& color) {
  switch (m) {
    case Marker::kTriangleUp:
      return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\" fill=\"{}\"/>", px(x), px(y - 4.5),
                         px(x - 4), px(y + 3), px(x + 4), px(y + 3), color);
    case Marker::kTriangleDown:
      return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\" fill=\"{}\"/>", px(x), px(y + 4.5),
                         px(x - 4), px(y - 3), px(x + 4), px(y - 3), color);
    case Marker::kCircle:
      break;
  }
  return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>", px(x), px(y), color);
}

}  // namespace

std::string duration_text(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.3g} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.3g} \u00b5s", seconds * 1e6);
  if (a < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (a < 60) return fmt::format("{:.3g} s", seconds);
  if (a < 3600) return fmt::format("{:.3g} min", seconds / 60);
  if (a < 86400) return fmt::format("{:.3g} h", seconds / 3600);
  return fmt::format("{:.3g} d", seconds / 86400);
}

const char* palette_color(size_t i) {
  return kPalette[i % std::size(kPalette)];
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  expand_degenerate(&lo, &hi);
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw * (1 - 1e-12)) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (int i = 0; i < 200; ++i) {
    const double v = first + i * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    if (v >= hi - step * 1e-9) break;
  }
  return ticks;
}

void downsample_min_max(std::vector<double>* x, std::vector<double>* y, size_t max_points) {
  const size_t n = std::min(x->size(), y->size());
  if (n <= max_points || max_points < 4) return;
  const size_t buckets = max_points / 2;
  std::vector<size_t> keep;
  keep.reserve(max_points + 2);
  keep.push_back(0);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = b * n / buckets, end = (b + 1) * n / buckets;
    size_t lo = begin, hi = begin;
    for (size_t i = begin; i < end; ++i) {
      if ((*y)[i] < (*y)[lo]) lo = i;
      if ((*y)[i] > (*y)[hi]) hi = i;
    }
    keep.push_back(std::min(lo, hi));
    keep.push_back(std::max(lo, hi));
  }
  keep.push_back(n - 1);
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<double> nx, ny;
  nx.reserve(keep.size());
  ny.reserve(keep.size());
  for (size_t i : keep) {
    nx.push_back((*x)[i]);
    ny.push_back((*y)[i]);
  }
  *x = std::move(nx);
  *y = std::move(ny);
}

std::string render_chart(const ChartSpec& spec) {
  const double width = spec.width, height = spec.height;
  const bool bars = !spec.categories.empty();
  const std::string id = html_escape(spec.id);

  // Legend rows (wrapped to the width), laid out before the plot area is known.
  struct LegendItem {
    std::string name, color;
    bool dashed;
    SeriesStyle style;
    Marker marker;
    double x, row;
  };
  std::vector<LegendItem> legend;
  {
    double x = 62, row = 0;
    for (size_t i = 0; i < spec.series.size(); ++i) {
      const Series& s = spec.series[i];
      if (s.name.empty()) continue;
      const double w = 22 + text_width(s.name) + 14;
      if (x + w > width - 8 && x > 62) {
        x = 62;
        row += 1;
      }
      legend.push_back({s.name, s.color.empty() ? palette_color(i) : s.color, s.dashed, s.style,
                        s.marker, x, row});
      x += w;
    }
  }
  const double legend_rows = legend.empty() ? 0 : legend.back().row + 1;
  const double left = 62, right = width - 16, top = 26 + 16 * legend_rows + 6, bottom = height - 40;

  // Data ranges.
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  bool any = false;
  for (const Series& s : spec.series) {
    const size_t n = std::min(s.x.size(), s.y.size());
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      any = true;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
      if (i < s.lo.size() && std::isfinite(s.lo[i])) y_lo = std::min(y_lo, s.lo[i]);
      if (i < s.hi.size() && std::isfinite(s.hi[i])) y_hi = std::max(y_hi, s.hi[i]);
    }
  }
  if (!any) x_lo = y_lo = 0, x_hi = y_hi = 1;
  if (bars) {
    x_lo = -0.5;
    x_hi = static_cast<double>(spec.categories.size()) - 0.5;
  }
  if (spec.y_include_zero || bars) {
    y_lo = std::min(y_lo, 0.0);
    y_hi = std::max(y_hi, 0.0);
  }
  if (spec.x_min) x_lo = *spec.x_min;
  if (spec.x_max) x_hi = *spec.x_max;
  expand_degenerate(&x_lo, &x_hi);
  std::vector<Tick> y_ticks;
  if (spec.y_min && spec.y_max) {
    y_lo = *spec.y_min;
    y_hi = *spec.y_max;
    expand_degenerate(&y_lo, &y_hi);
    y_ticks = linear_ticks(y_lo, y_hi, 5, false);
  } else {
    if (spec.y_min) y_lo = *spec.y_min;
    if (spec.y_max) y_hi = *spec.y_max;
    expand_degenerate(&y_lo, &y_hi);
    // The y domain widens to the enclosing nice ticks so the frame never cuts a line.
    const std::vector<double> t = nice_ticks(y_lo, y_hi, 5);
    if (!spec.y_min) y_lo = t.front();
    if (!spec.y_max) y_hi = t.back();
    y_ticks = linear_ticks(y_lo, y_hi, 5, false);
  }
  XScale sx{{x_lo, x_hi}, {left, right}, {}};
  if (spec.x_axis == XAxis::kTimeNs && !bars && any) {
    std::vector<double> xs;
    for (const Series& ser : spec.series) {
      for (double v : ser.x) {
        if (std::isfinite(v)) xs.push_back(v);
      }
    }
    sx = time_scale(std::move(xs), x_lo, x_hi, left, right);
  }
  std::vector<Tick> x_ticks;
  if (bars) {
    for (size_t i = 0; i < spec.categories.size(); ++i) {
      x_ticks.push_back({static_cast<double>(i), spec.categories[i]});
    }
  } else if (spec.x_axis == XAxis::kTimeNs) {
    // Ticks per stretch of data, in proportion to its width; labels kept 45 px apart.
    double from = x_lo;
    std::vector<std::pair<double, double>> pieces;
    for (const auto& [a, b] : sx.gaps) {
      pieces.push_back({from, a});
      from = b;
    }
    pieces.push_back({from, x_hi});
    for (const auto& [a, b] : pieces) {
      const double w = sx(b) - sx(a);
      const int target = std::max(1, static_cast<int>(std::lround(w / kPxPerXTick)));
      for (Tick& t : time_ticks(a, b, target)) {
        if (!x_ticks.empty() && sx(t.value) - sx(x_ticks.back().value) < 45) continue;
        x_ticks.push_back(std::move(t));
      }
    }
  } else {
    const int target = std::max(2, static_cast<int>(std::lround((right - left) / kPxPerXTick)));
    x_ticks = linear_ticks(x_lo, x_hi, target, spec.x_axis == XAxis::kInteger);
  }
  const Scale sy{y_lo, y_hi, bottom, top};

  std::string out = fmt::format(
      "<svg class=\"fxt-chart\" id=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\">\n",
      id, spec.width, spec.height, spec.width, spec.height, html_escape(spec.title));
  fmt::format_to(std::back_inserter(out), "<title>{}</title>\n", html_escape(spec.title));
  fmt::format_to(std::back_inserter(out),
                 "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                 spec.width, spec.height);
  fmt::format_to(std::back_inserter(out),
                 "<clipPath id=\"{}-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                 "height=\"{}\"/></clipPath>\n",
                 id, px(left), px(top), px(right - left), px(bottom - top));
  fmt::format_to(std::back_inserter(out),
                 "<text x=\"{}\" y=\"17\" font-size=\"13\" font-weight=\"bold\" "
                 "fill=\"#222\">{}</text>\n",
                 px(left), html_escape(spec.title));

  // Grid, frame, ticks and axis labels.
  out += "<g class=\"fxt-axes\" font-size=\"11\" fill=\"#444\">\n";
  for (const Tick& t : y_ticks) {
    const double y = sy(t.value);
    fmt::format_to(std::back_inserter(out),
                   "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e6e6e6\"/>"
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                   px(left), px(y), px(right), px(y), px(left - 5), px(y + 3.5),
                   html_escape(t.label));
  }
  for (const Tick& t : x_ticks) {
    const double x = sx(t.value);
    if (!bars) {
      fmt::format_to(std::back_inserter(out),
                     "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e6e6e6\"/>", px(x),
                     px(top), px(x), px(bottom));
    }
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x),
                   px(bottom + 14), html_escape(t.label));
  }
  fmt::format_to(std::back_inserter(out),
                 "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                 "stroke=\"#999\"/>\n",
                 px(left), px(top), px(right - left), px(bottom - top));
  // Collapsed stretches without data: a grey band and a break mark on the axis.
  for (const auto& [a, b] : sx.gaps) {
    const double x0 = sx(a), x1 = sx(b), xm = 0.5 * (x0 + x1);
    fmt::format_to(std::back_inserter(out),
                   "<g class=\"fxt-axis-break\" data-gap-s=\"{:.0f}\"><title>no data for {}"
                   "</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                   "fill=\"#f2f2f2\"/><path d=\"M{} {}l4 -8M{} {}l4 -8\" stroke=\"#666\"/></g>\n",
                   (b - a) / kNsPerSecond, duration_text((b - a) / kNsPerSecond), px(x0), px(top),
                   px(x1 - x0), px(bottom - top), px(xm - 4), px(bottom + 4), px(xm),
                   px(bottom + 4));
  }
  if (!spec.x_label.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n",
                   px(0.5 * (left + right)), px(height - 8), html_escape(spec.x_label));
  }
  if (!spec.y_label.empty()) {
    const double cy = 0.5 * (top + bottom);
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" "
                   "transform=\"rotate(-90 14 {})\">{}</text>\n",
                   px(cy), px(cy), html_escape(spec.y_label));
  }
  out += "</g>\n";
  if (!any) {
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" "
                   "fill=\"#888\">no data</text>\n",
                   px(0.5 * (left + right)), px(0.5 * (top + bottom)));
  }

  // Series.
  size_t n_bar_series = 0;
  for (const Series& s : spec.series) n_bar_series += s.style == SeriesStyle::kBars;
  size_t bar_index = 0;
  const double baseline_y = sy(std::clamp(0.0, y_lo, y_hi));
  for (size_t si = 0; si < spec.series.size(); ++si) {
    const Series& s = spec.series[si];
    const std::string color = s.color.empty() ? palette_color(si) : s.color;
    const size_t n = std::min(s.x.size(), s.y.size());
    size_t finite = 0;
    for (size_t i = 0; i < n; ++i) finite += std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
    fmt::format_to(std::back_inserter(out),
                   "<g class=\"fxt-series\" data-name=\"{}\" data-points=\"{}\" "
                   "clip-path=\"url(#{}-clip)\">",
                   html_escape(s.name), finite, id);
    const char* dash = s.dashed ? " stroke-dasharray=\"5 3\"" : "";
    if (s.style == SeriesStyle::kLine || s.style == SeriesStyle::kStep) {
      std::string d;
      bool pen_down = false;
      double prev_y = 0;
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
          pen_down = false;
          continue;
        }
        const double x = sx(s.x[i]), y = sy(s.y[i]);
        if (!pen_down) {
          fmt::format_to(std::back_inserter(d), "M{} {}", px(x), px(y));
        } else if (s.style == SeriesStyle::kStep) {
          fmt::format_to(std::back_inserter(d), "H{}", px(x));
          if (y != prev_y) fmt::format_to(std::back_inserter(d), "V{}", px(y));
        } else {
          fmt::format_to(std::back_inserter(d), "L{} {}", px(x), px(y));
        }
        pen_down = true;
        prev_y = y;
      }
      if (finite == 1) {  // a lone point would be invisible as a path
        for (size_t i = 0; i < n; ++i) {
          if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
            out += marker_svg(Marker::kCircle, sx(s.x[i]), sy(s.y[i]), color);
          }
        }
      }
      if (!d.empty()) {
        fmt::format_to(std::back_inserter(out),
                       "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" "
                       "stroke-linejoin=\"round\"{}/>",
                       d, color, dash);
      }
    } else if (s.style == SeriesStyle::kMarkers) {
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        out += marker_svg(s.marker, sx(s.x[i]), sy(s.y[i]), color);
      }
    } else {  // bars: group of n_bar_series bars centred on each category
      const double group = 0.8 / static_cast<double>(std::max<size_t>(1, n_bar_series));
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        const double x0 = s.x[i] - 0.4 + group * static_cast<double>(bar_index);
        const double px0 = sx(x0), px1 = sx(x0 + group), y = sy(s.y[i]);
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                       px(px0 + 1), px(std::min(y, baseline_y)), px(std::max(0.5, px1 - px0 - 2)),
                       px(std::fabs(baseline_y - y)), color);
      }
    }
    // Error bars (bars: at the bar's centre).
    const double group = 0.8 / static_cast<double>(std::max<size_t>(1, n_bar_series));
    for (size_t i = 0; i < n && i < s.lo.size() && i < s.hi.size(); ++i) {
      if (!std::isfinite(s.lo[i]) || !std::isfinite(s.hi[i]) || !std::isfinite(s.x[i])) continue;
      const double xc = s.style == SeriesStyle::kBars
                            ? sx(s.x[i] - 0.4 + group * (static_cast<double>(bar_index) + 0.5))
                            : sx(s.x[i]);
      const double y0 = sy(s.lo[i]), y1 = sy(s.hi[i]);
      fmt::format_to(std::back_inserter(out),
                     "<path class=\"fxt-errorbar\" d=\"M{} {}V{}M{} {}H{}M{} {}H{}\" "
                     "stroke=\"#333\" stroke-width=\"1.2\" fill=\"none\"/>",
                     px(xc), px(y0), px(y1), px(xc - 3), px(y0), px(xc + 3), px(xc - 3), px(y1),
                     px(xc + 3));
    }
    if (s.style == SeriesStyle::kBars) ++bar_index;
    out += "</g>\n";
  }

  // Legend.
  if (!legend.empty()) {
    out += "<g class=\"fxt-legend\" font-size=\"11\" fill=\"#333\">";
    for (const LegendItem& item : legend) {
      const double y = 30 + 16 * item.row;
      if (item.style == SeriesStyle::kMarkers) {
        out += marker_svg(item.marker, item.x + 8, y - 4, item.color);
      } else if (item.style == SeriesStyle::kBars) {
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"9\" fill=\"{}\"/>",
                       px(item.x), px(y - 8.5), item.color);
      } else {
        fmt::format_to(std::back_inserter(out),
                       "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                       "stroke-width=\"2.2\"{}/>",
                       px(item.x), px(y - 4), px(item.x + 16), px(y - 4), item.color,
                       item.dashed ? " stroke-dasharray=\"5 3\"" : "");
      }
      fmt::format_to(std::back_inserter(out), "<text x=\"{}\" y=\"{}\">{}</text>", px(item.x + 22),
                     px(y), html_escape(item.name));
    }
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string render_zoomable_chart(const ChartSpec& spec) {
  const std::string id = html_escape(spec.id);
  std::string out = fmt::format("<div class=\"fxt-zoom\" id=\"{}-zoom\">", id);
  out += "<span class=\"fxt-zoom-title\">zoom</span>";
  for (int z : kZoomFactors) {
    fmt::format_to(std::back_inserter(out),
                   "<input type=\"radio\" class=\"fxt-zoom-in fxt-zoom-{}\" name=\"{}-zoom\" "
                   "id=\"{}-zoom-{}\"{}><label for=\"{}-zoom-{}\">{}\u00d7</label>",
                   z, id, id, z, z == 1 ? " checked" : "", id, z, z);
  }
  out += "\n";
  for (int z : kZoomFactors) {
    ChartSpec level = spec;
    level.width = spec.width * z;
    if (z > 1) level.id = fmt::format("{}-x{}", spec.id, z);
    std::string svg = render_chart(level);
    if (z > 1) {  // mark the copy (after the id): the same chart at another width
      svg.insert(svg.find(" viewBox="), fmt::format(" data-zoom=\"{}\"", z));
    }
    fmt::format_to(std::back_inserter(out),
                   "<div class=\"fxt-zoom-view fxt-zoom-view-{}\">{}</div>\n", z, svg);
  }
  out += "</div>\n";
  return out;
}

std::string zoom_css() {
  // Radios hidden but focusable (arrow keys switch levels); the checked level's view shows
  // and scrolls horizontally inside the figure, which may shrink below its content's width.
  std::string css = R"css(
.fxt-zoom{max-width:100%;font-size:12px;color:#444}
.fxt-zoom-title{margin:0 6px 0 8px}
.fxt-zoom>input{position:absolute;opacity:0;width:1px;height:1px;margin:0}
.fxt-zoom>label{display:inline-block;margin:4px 3px 2px 0;padding:0 6px;border:1px solid #bbb;border-radius:3px;cursor:pointer;user-select:none}
.fxt-zoom>input:checked+label{background:#555;border-color:#555;color:#fff}
.fxt-zoom>input:focus-visible+label{outline:2px solid #f28e2b}
.fxt-zoom-view{display:none;overflow-x:auto;max-width:100%}
)css";
  for (int z : kZoomFactors) {
    fmt::format_to(std::back_inserter(css), "{}.fxt-zoom-{}:checked~.fxt-zoom-view-{}",
                   z == kZoomFactors[0] ? "" : ",", z, z);
  }
  css += "{display:block}\n";
  return css;
}

}  // namespace fxt::report
