// Line charts for papers: series with point markers (a different shape per series), optional
// bands and dashed vertical markers, axes with nice ticks, a title, and a legend outside the
// plot area (right of it, or below it when the names are long) so that no text covers data.
#pragma once
#include <string>
#include <vector>

#include "dplab/tools/plot/series.h"

typedef struct _cairo cairo_t;

namespace dplab::plot {

struct ChartSpec {
  int width = 800, height = 500;  // pixels (PNG) or points (SVG, PDF)
  double scale = 1;               // a PNG's pixels per unit (surface.h)
  std::string title, x_label, y_label;
  std::vector<Series> series;
  // Last, grey legend lines: what the bands and hollow markers mean.
  std::vector<std::string> notes;
};

struct Rect {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// A vertical marker's text, placed above the plot area on row `row` (0 nearest the plot).
struct MarkerLabel {
  double x = 0;  // data x of the marker
  std::string text;
  int series = -1;  // the colour's series, or -1 when several series share the marker
  Rect box;         // where the text goes, in figure coordinates
};

// Where everything lands in figure coordinates (origin top-left, y down).
struct ChartLayout {
  Rect plot;  // the plot area: data is drawn only inside it
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  std::vector<double> x_ticks, y_ticks;
  double x_step = 1, y_step = 1;
  Rect legend;  // empty (zero size) when no series is named
  bool legend_below = false;
  int legend_cols = 1;  // entries per legend row
  std::vector<MarkerLabel> marker_labels;
  // Differences of halves: x - x_lo overflows for axes that span more than the largest double.
  double px(double x) const {
    return plot.x0 + (x / 2 - x_lo / 2) / (x_hi / 2 - x_lo / 2) * (plot.x1 - plot.x0);
  }
  double py(double y) const {
    return plot.y1 - (y / 2 - y_lo / 2) / (y_hi / 2 - y_lo / 2) * (plot.y1 - plot.y0);
  }
};

// The colour of series i as RGB in [0, 1] (a fixed, colour-blind-friendly palette of 8).
struct Color {
  double r = 0, g = 0, b = 0;
};
Color series_color(size_t i);

// The indices of the points of a polyline (x, y in figure units) that a drawing with columns
// `column` units wide shows: of each run of consecutive points within one column, the first,
// the lowest, the highest and the last, in their order; non-finite points are left out. A
// series of a million records whose x rises (epochs, steps, time) keeps at most four points per
// pixel column, so that drawing it costs cairo a path as long as the figure is wide (cairo's
// stroke of a long zig-zag grows about quadratically: 100k records took minutes). One pass,
// linear in the points.
std::vector<size_t> polyline_points(const std::vector<double>& x, const std::vector<double>& y,
                                    double column);

// Throws dplab::Error when the figure is too small for its labels or a series is malformed.
ChartLayout layout_chart(cairo_t* cr, const ChartSpec& spec);
// The same layout measured on a scratch surface (tests, callers without a surface).
ChartLayout layout_chart(const ChartSpec& spec);
void draw_chart(cairo_t* cr, const ChartSpec& spec);
// Draws `spec` into `path`: PNG, SVG or PDF by its extension (surface.h).
void render_chart(const ChartSpec& spec, const std::string& path);

}  // namespace dplab::plot
