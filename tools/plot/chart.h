// Line charts: series of (x, y) points, axes with "nice" ticks (1, 2 or 5 times a power of ten)
// and numeric labels, a title, a legend placed in the corner with the fewest points, and
// optional dashed vertical markers (e.g. where a training stage begins).
#pragma once
#include <string>
#include <vector>

#include "dplab/tools/plot/canvas.h"

namespace dplab::plot {

struct VMarker {
  double x = 0;
  std::string text;  // drawn at the top of the marker; may be empty
};

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::vector<VMarker> markers;  // drawn in the series' colour
};

struct ChartSpec {
  int width = 800, height = 500;
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

// Where data lands on the canvas: the plot rectangle (pixels, inclusive) and the axis ranges.
struct ChartLayout {
  int left = 0, top = 0, right = 0, bottom = 0;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  std::vector<double> x_ticks, y_ticks;
  double x_step = 1, y_step = 1;
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); }
  double py(double y) const { return bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top); }
};

// The colour of series i (a fixed, distinguishable palette; cycles after 10).
Rgb series_color(size_t i);

// Tick positions covering [lo, hi] with about `target` steps of a nice size; `step` receives
// the step. The returned ticks start at or below lo and end at or above hi.
std::vector<double> nice_ticks(double lo, double hi, int target, double* step);
// A tick label with as many decimals as the step needs ("0.25", "1e+06" for huge values).
std::string tick_label(double v, double step);

ChartLayout layout_chart(const ChartSpec& spec);
Canvas render_chart(const ChartSpec& spec);

}  // namespace dplab::plot
