// draw_chart: grid, bands, curves with point markers, vertical markers, axes, texts and the
// legend, where layout_chart put them.
#include "dplab/tools/plot/chart.h"

#include <cairo.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "dplab/tools/plot/chart_style.h"
#include "dplab/tools/plot/surface.h"
#include "dplab/tools/plot/ticks.h"

namespace dplab::plot {
namespace {

using namespace style;

void set_color(cairo_t* cr, Color c, double alpha = 1) {
  cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

constexpr Color kInk{0.1, 0.1, 0.1}, kGrid{0.9, 0.9, 0.9}, kFrame{0.35, 0.35, 0.35},
    kGrey{0.4, 0.4, 0.4};

// Point marker of series i at (x, y): a shape per series (circle, square, triangle, diamond,
// inverted triangle, cross: shapes that stay distinct at 7 px), filled in the series' colour with a
// thin white edge so that overlapping curves stay apart.
void point_marker(cairo_t* cr, size_t i, double x, double y, Color c) {
  const double r = kMarkerSize;
  switch (i % 6) {
    case 0:
      cairo_arc(cr, x, y, r, 0, 2 * std::numbers::pi);
      break;
    case 1:
      cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
      break;
    case 2:
      cairo_move_to(cr, x, y - 1.15 * r);
      cairo_line_to(cr, x + r, y + 0.75 * r);
      cairo_line_to(cr, x - r, y + 0.75 * r);
      cairo_close_path(cr);
      break;
    case 3:
      cairo_move_to(cr, x, y - 1.2 * r);
      cairo_line_to(cr, x + 1.2 * r, y);
      cairo_line_to(cr, x, y + 1.2 * r);
      cairo_line_to(cr, x - 1.2 * r, y);
      cairo_close_path(cr);
      break;
    case 4:
      cairo_move_to(cr, x, y + 1.15 * r);
      cairo_line_to(cr, x + r, y - 0.75 * r);
      cairo_line_to(cr, x - r, y - 0.75 * r);
      cairo_close_path(cr);
      break;
    default:  // a cross
      cairo_rectangle(cr, x - 1.1 * r, y - 0.35 * r, 2.2 * r, 0.7 * r);
      cairo_rectangle(cr, x - 0.35 * r, y - 1.1 * r, 0.7 * r, 2.2 * r);
      break;
  }
  set_color(cr, c);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_set_line_width(cr, 0.6);
  cairo_stroke(cr);
}

// The final record: a hollow marker, twice the size, with a whisker over its band, shifted
// `dodge` pixels sideways so that several series' whiskers at the same x stay apart.
void final_marker(cairo_t* cr, const ChartLayout& L, const Series::Final& f, Color c,
                  double dodge) {
  const double x = L.px(f.x) + dodge, y = L.py(f.y);
  set_color(cr, c);
  cairo_set_line_width(cr, 1.4);
  if (f.hi > f.lo) {
    for (double v : {f.lo, f.hi}) {
      cairo_move_to(cr, x - 4, L.py(v));
      cairo_line_to(cr, x + 4, L.py(v));
    }
    cairo_move_to(cr, x, L.py(f.hi));
    cairo_line_to(cr, x, L.py(f.lo));
    cairo_stroke(cr);
  }
  cairo_arc(cr, x, y, 2 * kMarkerSize, 0, 2 * std::numbers::pi);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_fill_preserve(cr);
  set_color(cr, c);
  cairo_set_line_width(cr, 1.8);
  cairo_stroke(cr);
}

// Points per stroke: cairo's stroke of a polyline costs about the square of its crossings, and
// the path of a series whose x goes back and forth stays long after polyline_points. Pieces
// with round caps draw what one stroke with round joins draws.
constexpr size_t kStrokePiece = 256;

void draw_series(cairo_t* cr, const ChartLayout& L, const Series& s, size_t i, double dodge) {
  const Color c = series_color(i);
  // Figure coordinates, reduced to what one device pixel column shows.
  double column = 1, unused = 0;
  cairo_device_to_user_distance(cr, &column, &unused);
  std::vector<double> px(s.x.size()), py(s.x.size());
  for (size_t k = 0; k < s.x.size(); ++k) px[k] = L.px(s.x[k]);
  if (!s.lo.empty()) {
    std::vector<double> hi(s.x.size()), lo(s.x.size());
    for (size_t k = 0; k < s.x.size(); ++k) {
      hi[k] = L.py(s.hi[k]);
      lo[k] = L.py(s.lo[k]);
    }
    const auto top = polyline_points(px, hi, std::abs(column)),
               bottom = polyline_points(px, lo, std::abs(column));
    for (size_t k : top) cairo_line_to(cr, px[k], hi[k]);  // the first line_to moves there
    for (size_t n = bottom.size(); n-- > 0;) cairo_line_to(cr, px[bottom[n]], lo[bottom[n]]);
    cairo_close_path(cr);
    set_color(cr, c, 0.18);
    cairo_fill(cr);
  }
  for (size_t k = 0; k < s.x.size(); ++k) py[k] = L.py(s.y[k]);
  const auto line = polyline_points(px, py, std::abs(column));
  set_color(cr, c);
  cairo_set_line_width(cr, kLineWidth);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (size_t start = 0; start + 1 < line.size(); start += kStrokePiece - 1) {
    cairo_move_to(cr, px[line[start]], py[line[start]]);
    for (size_t n = start + 1; n < std::min(line.size(), start + kStrokePiece); ++n)
      cairo_line_to(cr, px[line[n]], py[line[n]]);
    cairo_stroke(cr);
  }
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  // Long series get markers on every n-th point (first and last always) to stay readable.
  const size_t every = (s.x.size() + kMaxMarkersPerSeries - 1) / kMaxMarkersPerSeries;
  for (size_t k = 0; k < s.x.size(); ++k)
    if ((k % every == 0 || k + 1 == s.x.size()) && std::isfinite(px[k]) && std::isfinite(py[k]))
      point_marker(cr, i, px[k], py[k], c);
  if (s.final_point) final_marker(cr, L, *s.final_point, c, dodge);
}

void draw_axes(cairo_t* cr, const ChartSpec& spec, const ChartLayout& L) {
  const Rect& P = L.plot;
  cairo_set_line_width(cr, 0.8);
  set_color(cr, kGrid);
  for (double t : L.y_ticks) {
    cairo_move_to(cr, P.x0, std::round(L.py(t)) + 0.5);
    cairo_line_to(cr, P.x1, std::round(L.py(t)) + 0.5);
  }
  for (double t : L.x_ticks) {
    cairo_move_to(cr, std::round(L.px(t)) + 0.5, P.y0);
    cairo_line_to(cr, std::round(L.px(t)) + 0.5, P.y1);
  }
  cairo_stroke(cr);
  set_color(cr, kInk);
  cairo_set_line_width(cr, 1);
  for (double t : L.y_ticks) {
    const double y = std::round(L.py(t)) + 0.5;
    cairo_move_to(cr, P.x0 - kTickLen, y);
    cairo_line_to(cr, P.x0, y);
    cairo_stroke(cr);
    draw_text(cr, kTickFont, tick_label(t, L.y_step), P.x0 - kTickLen - kTickGap, y, HAlign::right,
              VAlign::middle);
  }
  for (double t : L.x_ticks) {
    const double x = std::round(L.px(t)) + 0.5;
    cairo_move_to(cr, x, P.y1);
    cairo_line_to(cr, x, P.y1 + kTickLen);
    cairo_stroke(cr);
    draw_text(cr, kTickFont, tick_label(t, L.x_step), x, P.y1 + kTickLen + kTickGap, HAlign::center,
              VAlign::top);
  }
  const double tick_h = line_height(cr, kTickFont);
  if (!spec.x_label.empty())
    draw_text(cr, kLabelFont, spec.x_label, (P.x0 + P.x1) / 2,
              P.y1 + kTickLen + kTickGap + tick_h + kLabelGap, HAlign::center, VAlign::top);
  if (!spec.y_label.empty())
    draw_text(cr, kLabelFont, spec.y_label, kPad, (P.y0 + P.y1) / 2, HAlign::center, VAlign::top,
              true);
  if (!spec.title.empty()) {
    // A title wider than the figure is drawn smaller rather than cut.
    Font f = kTitleFont;
    const double w = text_width(cr, f, spec.title), room = spec.width - 2 * kPad;
    if (w > room) f.size *= room / w;
    const double cx = std::clamp((P.x0 + P.x1) / 2, kPad + std::min(w, room) / 2,
                                 spec.width - kPad - std::min(w, room) / 2);
    draw_text(cr, f, spec.title, cx, kPad, HAlign::center, VAlign::top);
  }
  set_color(cr, kFrame);
  cairo_rectangle(cr, std::round(P.x0) + 0.5, std::round(P.y0) + 0.5, std::round(P.x1 - P.x0),
                  std::round(P.y1 - P.y0));
  cairo_stroke(cr);
}

void draw_legend(cairo_t* cr, const ChartSpec& spec, const ChartLayout& L) {
  const Rect& B = L.legend;
  if (B.x1 <= B.x0) return;
  const double row_h = line_height(cr, kLegendFont) * 1.5;
  double text_w = 0;
  for (const auto& s : spec.series)
    if (!s.label.empty()) text_w = std::max(text_w, text_width(cr, kLegendFont, s.label));
  const double entry_w = 8 + kSwatch + 6 + text_w + 8;
  const int cols = L.legend_cols;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_rectangle(cr, B.x0, B.y0, B.x1 - B.x0, B.y1 - B.y0);
  cairo_fill_preserve(cr);
  set_color(cr, kGrid);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  int k = 0;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const Series& s = spec.series[i];
    if (s.label.empty()) continue;
    const double x = B.x0 + (k % cols) * entry_w + 8, y = B.y0 + 6 + (k / cols) * row_h + row_h / 2;
    ++k;
    const Color c = series_color(i);
    if (!s.lo.empty()) {
      set_color(cr, c, 0.18);
      cairo_rectangle(cr, x, y - row_h * 0.32, kSwatch, row_h * 0.64);
      cairo_fill(cr);
    }
    set_color(cr, c);
    cairo_set_line_width(cr, kLineWidth);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + kSwatch, y);
    cairo_stroke(cr);
    point_marker(cr, i, x + kSwatch / 2, y, c);
    set_color(cr, kInk);
    draw_text(cr, kLegendFont, s.label, x + kSwatch + 6, y, HAlign::left, VAlign::middle);
  }
  const int rows = (k + cols - 1) / cols;
  set_color(cr, kGrey);
  for (size_t n = 0; n < spec.notes.size(); ++n)
    draw_text(cr, kNoteFont, spec.notes[n], B.x0 + 8,
              B.y0 + 6 + (rows + double(n)) * row_h + row_h / 2, HAlign::left, VAlign::middle);
}

std::string description(const ChartSpec& spec) {
  std::string d = "x: " + spec.x_label + "; y: " + spec.y_label;
  for (const auto& s : spec.series)
    if (!s.label.empty()) d += "; series: " + s.label;
  for (const auto& n : spec.notes) d += "; " + n;
  return d;
}

}  // namespace

std::vector<size_t> polyline_points(const std::vector<double>& x, const std::vector<double>& y,
                                    double column) {
  const auto finite = [&](size_t k) { return std::isfinite(x[k]) && std::isfinite(y[k]); };
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> r;
  for (size_t k = 0; k < n;) {
    if (!finite(k)) {
      ++k;
      continue;
    }
    // A run of consecutive points in one column: its first, lowest, highest and last point.
    const double col = std::floor(x[k] / column);
    size_t first = k, lo = k, hi = k, last = k;
    for (++k; k < n && finite(k) && std::floor(x[k] / column) == col; ++k) {
      if (y[k] < y[lo]) lo = k;
      if (y[k] > y[hi]) hi = k;
      last = k;
    }
    for (size_t p : {first, std::min(lo, hi), std::max(lo, hi), last})
      if (r.empty() || r.back() < p) r.push_back(p);
  }
  return r;
}

Color series_color(size_t i) {
  // Okabe and Ito's colour-blind-safe palette, its yellow darkened to read on white.
  static constexpr std::array<Color, 8> kPalette{{{0.000, 0.447, 0.698},
                                                  {0.835, 0.369, 0.000},
                                                  {0.000, 0.620, 0.451},
                                                  {0.800, 0.475, 0.655},
                                                  {0.902, 0.624, 0.000},
                                                  {0.337, 0.706, 0.914},
                                                  {0.000, 0.000, 0.000},
                                                  {0.600, 0.560, 0.100}}};
  return kPalette[i % kPalette.size()];
}

void draw_chart(cairo_t* cr, const ChartSpec& spec) {
  const ChartLayout L = layout_chart(cr, spec);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  draw_axes(cr, spec, L);

  // Data only inside the plot area (widened by a marker so that end points stay whole).
  cairo_save(cr);
  const double m = 2 * kMarkerSize + 2;  // the final record's marker
  cairo_rectangle(cr, L.plot.x0 - m, L.plot.y0 - m, L.plot.x1 - L.plot.x0 + 2 * m,
                  L.plot.y1 - L.plot.y0 + 2 * m);
  cairo_clip(cr);
  // Vertical markers under the curves, dashed in their series' colour.
  const double dash[] = {5, 3};
  cairo_set_dash(cr, dash, 2, 0);
  cairo_set_line_width(cr, 1.1);
  for (size_t i = 0; i < spec.series.size(); ++i)
    for (const auto& mk : spec.series[i].markers) {
      const double x = std::round(L.px(mk.x)) + 0.5;
      set_color(cr, series_color(i), 0.8);
      cairo_move_to(cr, x, L.plot.y0);
      cairo_line_to(cr, x, L.plot.y1);
      cairo_stroke(cr);
    }
  cairo_set_dash(cr, nullptr, 0, 0);
  const auto finals = std::count_if(spec.series.begin(), spec.series.end(),
                                    [](const Series& s) { return s.final_point.has_value(); });
  double dodge = -3.0 * double(finals - 1) / 2;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    if (!spec.series[i].x.empty()) draw_series(cr, L, spec.series[i], i, dodge);
    if (spec.series[i].final_point) dodge += 3.0;
  }
  cairo_restore(cr);

  for (const auto& ml : L.marker_labels) {
    set_color(cr, ml.series < 0 ? kGrey : series_color(size_t(ml.series)));
    draw_text(cr, kMarkerFont, ml.text, ml.box.x0, ml.box.y0, HAlign::left, VAlign::top);
  }
  draw_legend(cr, spec, L);
}

void render_chart(const ChartSpec& spec, const std::string& path) {
  Surface surface(path, spec.width, spec.height, spec.scale);
  draw_chart(surface.cr(), spec);
  surface.finish(spec.title, description(spec));
}

}  // namespace dplab::plot
