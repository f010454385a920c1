// The one chart mechanism of `fxt report`: a chart is a ChartSpec (series of x/y points drawn
// as lines, steps, markers or grouped bars, with axes, ticks, a legend and optional error
// bars) rendered to a self-contained inline <svg> element. No scripts, no external
// references (not even the SVG namespace URL: inline SVG in HTML5 needs none), so a report
// opens offline. Rendering is deterministic: the same spec gives the same bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fxt::report {

enum class SeriesStyle {
  kLine,     // straight segments; a non-finite y breaks the line
  kStep,     // holds each y until the next x (positions, inventories)
  kMarkers,  // one marker per point (fills on a price chart)
  kBars,     // grouped bars over ChartSpec::categories (x = category index)
};
enum class Marker { kCircle, kTriangleUp, kTriangleDown };

struct Series {
  std::string name;  // legend text; empty: not in the legend
  std::vector<double> x, y;
  SeriesStyle style = SeriesStyle::kLine;
  Marker marker = Marker::kCircle;
  std::string color;  // CSS colour; empty: the palette colour of the series' index
  bool dashed = false;
  std::vector<double> lo, hi;  // optional error bars (same length as y), bars and markers
};

// A series from its name, points and style (the other fields at their defaults).
inline Series make_series(std::string name, std::vector<double> x = {}, std::vector<double> y = {},
                          SeriesStyle style = SeriesStyle::kLine) {
  Series s;
  s.name = std::move(name);
  s.x = std::move(x);
  s.y = std::move(y);
  s.style = style;
  return s;
}

enum class XAxis {
  kLinear,
  kInteger,  // ticks at integers only (epochs, folds)
  kTimeNs,   // x is UTC nanoseconds since the epoch; ticks at round clock times
};

struct ChartSpec {
  std::string id;  // unique in the document: the svg's id
  std::string title, x_label, y_label;
  XAxis x_axis = XAxis::kLinear;
  std::vector<std::string> categories;  // bar charts: one group of bars per category
  std::vector<Series> series;
  std::optional<double> x_min, x_max, y_min, y_max;  // fixed ranges (else from the data)
  bool y_include_zero = false;
  int width = 580, height = 300;  // CSS pixels
};

// The chart as one <svg class="fxt-chart" id="ID" ...> element. Each series is a
// <g class="fxt-series" data-name=".." data-points="N">; a chart without finite data shows
// its axes and "no data".
std::string render_chart(const ChartSpec& spec);

// The zoom factors of a zoomable chart's control, in order.
inline constexpr int kZoomFactors[] = {1, 2, 4, 8, 16};

// A chart whose x axis (time, epochs, steps) zooms without a script:
//   <div class="fxt-zoom" id="ID-zoom">
//     <input type="radio" class="fxt-zoom-in fxt-zoom-Z" name="ID-zoom" id="ID-zoom-Z">
//     <label for="ID-zoom-Z">Z×</label>            (one pair per factor, 1× checked)
//     <div class="fxt-zoom-view fxt-zoom-view-Z">  (one scroll container per factor)
//       <svg class="fxt-chart" id="ID" | "ID-xZ" data-zoom="Z" width="Z·spec.width" ...>
//   </div>
// Each level is the chart rendered natively at Z times its width (same height), so tick
// labels, markers, strokes and axis breaks keep their size and the time ticks get finer as
// the axis stretches; zoom_css() shows the view of the checked radio and lets it scroll.
std::string render_zoomable_chart(const ChartSpec& spec);

// The stylesheet rules of render_zoomable_chart's markup (a page holding one must include it).
std::string zoom_css();

// A duration in its unit: "250 ns", "1.5 ms", "45 s", "12.5 min", "3.2 h", "2.1 d".
std::string duration_text(double seconds);

// The palette colour of series i (a colour-blind-friendly ten-colour cycle).
const char* palette_color(size_t i);

// At most about max_points points of a long series, deterministically: the rows are cut into
// max_points / 2 equal buckets by index and each bucket keeps its minimum and maximum y in
// their original order (the first and last rows always stay), so spikes and drawdowns survive.
// Series no longer than max_points come back unchanged.
void downsample_min_max(std::vector<double>* x, std::vector<double>* y, size_t max_points);

// "Nice" tick values (steps of 1, 2, 2.5 or 5 x 10^k) covering [lo, hi] with about `target`
// ticks; the first tick <= lo and the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int target);

}  // namespace fxt::report
