// layout_chart: where the plot area, ticks, legend and marker texts go. The legend and the
// marker texts are placed outside the plot area, so no text covers data.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "dplab/core/error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/chart_style.h"
#include "dplab/tools/plot/ticks.h"

namespace dplab::plot {
namespace {

using namespace style;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
};

constexpr double kMax = std::numeric_limits<double>::max();

// Widens a range too narrow to have a scale: empty, one value, or values closer than a
// billionth of their magnitude (1 and the next double 1.0000000000000002; 0 and the denormal
// 5e-324), whose ticks would need more digits than a double has. Such values are drawn as one,
// with a tenth of it on either side (values below 1e-290, denormals included, count as 0), and
// never past the largest double.
void widen(Range& r) {
  if (r.lo > r.hi) {
    r.lo = 0;
    r.hi = 1;
  } else if (r.hi / 2 - r.lo / 2 < 500 * finest_step(r.lo, r.hi)) {
    const double c = std::abs(r.lo / 2 + r.hi / 2) < 1e-290 ? 0 : r.lo / 2 + r.hi / 2;
    const double d = c == 0 ? 1 : std::abs(c) * 0.1;
    r.lo = std::max(c - d, -kMax);
    r.hi = std::min(c + d, kMax);
  }
}

std::vector<std::string> legend_entries(const ChartSpec& spec) {
  std::vector<std::string> e;
  for (const auto& s : spec.series)
    if (!s.label.empty()) e.push_back(s.label);
  return e;
}

// Marker texts, one per (x, text) however many series share it, in x order.
std::vector<MarkerLabel> unique_marker_labels(const ChartSpec& spec) {
  std::map<std::pair<double, std::string>, int> seen;
  for (size_t i = 0; i < spec.series.size(); ++i)
    for (const auto& m : spec.series[i].markers) {
      if (m.text.empty()) continue;
      auto [it, fresh] = seen.try_emplace({m.x, m.text}, int(i));
      if (!fresh && it->second != int(i)) it->second = -1;
    }
  std::vector<MarkerLabel> r;
  for (const auto& [key, series] : seen) r.push_back({key.first, key.second, series, {}});
  return r;
}

}  // namespace

ChartLayout layout_chart(cairo_t* cr, const ChartSpec& spec) {
  Range xr, yr;
  bool whole_x = true;  // every x a whole number (epochs, steps, ranks): no tick between them
  for (const auto& s : spec.series) {
    DPLAB_CHECK(s.x.size() == s.y.size(), "series '{}': {} x values but {} y values", s.label,
                s.x.size(), s.y.size());
    DPLAB_CHECK(s.lo.size() == s.hi.size() && (s.lo.empty() || s.lo.size() == s.x.size()),
                "series '{}': a band of {} and {} values for {} points", s.label, s.lo.size(),
                s.hi.size(), s.x.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      xr.add(s.x[i]);
      yr.add(s.y[i]);
      whole_x = whole_x && s.x[i] == std::round(s.x[i]);
    }
    for (double v : s.lo) yr.add(v);
    for (double v : s.hi) yr.add(v);
    for (const auto& m : s.markers) xr.add(m.x);
    if (const auto& f = s.final_point) {
      xr.add(f->x);
      for (double v : {f->y, f->lo, f->hi}) yr.add(v);
    }
  }
  widen(xr);
  widen(yr);
  ChartLayout L;
  // A small margin on x keeps the point markers at both ends off the frame. Differences of
  // halves: hi - lo overflows when the values span more than the largest double.
  const double xm = 2 * (0.03 * (xr.hi / 2 - xr.lo / 2));
  L.x_lo = std::max(xr.lo - xm, -kMax);
  L.x_hi = std::min(xr.hi + xm, kMax);
  const double W = spec.width, H = spec.height;

  // The legend: right of the plot area when it fits in about a third of the width, else below
  // it in as many columns as fit.
  const auto entries = legend_entries(spec);
  const double row_h = line_height(cr, kLegendFont) * 1.5;
  double text_w = 0;
  for (const auto& e : entries) text_w = std::max(text_w, text_width(cr, kLegendFont, e));
  const double entry_w = 8 + kSwatch + 6 + text_w + 8;
  double note_w = 0;
  for (const auto& n : spec.notes) note_w = std::max(note_w, 8 + text_width(cr, kNoteFont, n) + 8);
  const int note_rows = entries.empty() ? 0 : int(spec.notes.size());
  double legend_w = 0, legend_h = 0;
  if (!entries.empty()) {
    L.legend_below = std::max(entry_w, note_w) > 0.34 * W;
    const int cols =
        L.legend_below ? std::clamp(int((W - 2 * kPad) / entry_w), 1, int(entries.size())) : 1;
    L.legend_cols = cols;
    const int rows = (int(entries.size()) + cols - 1) / cols;
    legend_w = std::max(cols * entry_w, note_w);
    legend_h = 6 + (rows + note_rows) * row_h + 4;
  }

  const double tick_h = line_height(cr, kTickFont), label_h = line_height(cr, kLabelFont);
  const double title_h = spec.title.empty() ? 0 : line_height(cr, kTitleFont) + 8;
  const double marker_h = line_height(cr, kMarkerFont);
  double right = W - kPad - (!entries.empty() && !L.legend_below ? legend_w + kLegendGap : 0);
  const double bottom = H - kPad - (L.legend_below ? legend_h + 10 : 0) -
                        (spec.x_label.empty() ? 0 : label_h + kLabelGap) - tick_h - kTickLen -
                        kTickGap;
  auto labels = unique_marker_labels(spec);
  int rows = 0;
  for (int iteration = 0; iteration < 6; ++iteration) {
    const double top = kPad + title_h + (rows > 0 ? rows * (marker_h + 3) + 4 : 0);
    const double plot_h = bottom - top;
    DPLAB_CHECK(plot_h >= 60, "figure {}x{} is too small for its labels (plot area {:.0f} high)",
                spec.width, spec.height, plot_h);
    L.y_ticks = nice_ticks(yr.lo, yr.hi, std::clamp(int(plot_h / 45), 2, 10), &L.y_step);
    // The outer ticks, or the data where no tick lies beyond it (at the largest double).
    L.y_lo = std::min(L.y_ticks.front(), yr.lo);
    L.y_hi = std::max(L.y_ticks.back(), yr.hi);
    double y_label_w = 0;
    for (double t : L.y_ticks)
      y_label_w = std::max(y_label_w, text_width(cr, kTickFont, tick_label(t, L.y_step)));
    const double left =
        kPad + (spec.y_label.empty() ? 0 : label_h + kLabelGap) + y_label_w + kTickGap + kTickLen;
    // The last x tick label is centred on its tick: keep half of it inside the figure.
    double plot_right = right;
    if (entries.empty() || L.legend_below)
      plot_right -= text_width(cr, kTickFont, tick_label(xr.hi, (xr.hi / 2 - xr.lo / 2) / 2)) / 2;
    DPLAB_CHECK(plot_right - left >= 80,
                "figure {}x{} is too small for its labels and legend (plot area {:.0f} wide)",
                spec.width, spec.height, plot_right - left);
    L.plot = {left, top, plot_right, bottom};
    // As many x ticks as fit with their labels apart.
    for (int target = std::max(1, int((plot_right - left) / 70));; --target) {
      L.x_ticks = nice_ticks(L.x_lo, L.x_hi, target, &L.x_step, whole_x ? 1.0 : 0.0);
      std::erase_if(L.x_ticks, [&](double t) {
        return t < L.x_lo - 1e-9 * L.x_step || t > L.x_hi + 1e-9 * L.x_step;
      });
      double widest = 0;
      for (double t : L.x_ticks)
        widest = std::max(widest, text_width(cr, kTickFont, tick_label(t, L.x_step)));
      if (widest + 12 <= L.x_step / 2 / (L.x_hi / 2 - L.x_lo / 2) * (plot_right - left) ||
          target == 1)
        break;
    }
    // Marker texts above the plot area, each on the lowest row where it overlaps no other.
    std::vector<std::vector<Rect>> taken;
    int used = 0;
    for (auto& m : labels) {
      const double w = text_width(cr, kMarkerFont, m.text);
      // (not std::clamp: a text wider than the figure has no valid range; it starts at kPad)
      const double x0 = std::max(kPad, std::min(L.px(m.x) - w / 2, W - kPad - w));
      int r = 0;
      for (;; ++r) {
        if (r == int(taken.size())) taken.emplace_back();
        const Rect probe{x0 - 4, 0, x0 + w + 4, 1};
        if (std::none_of(taken[r].begin(), taken[r].end(),
                         [&](const Rect& o) { return o.overlaps(probe); }))
          break;
      }
      taken[r].push_back({x0 - 4, 0, x0 + w + 4, 1});
      const double y1 = top - 4 - r * (marker_h + 3);
      m.box = {x0, y1 - marker_h, x0 + w, y1};
      used = std::max(used, r + 1);
    }
    if (used == rows) break;
    rows = used;
  }
  L.marker_labels = labels;
  if (!entries.empty()) {
    if (L.legend_below) {
      const double x0 = std::max(kPad, (L.plot.x0 + L.plot.x1 - legend_w) / 2);
      L.legend = {x0, H - kPad - legend_h, x0 + legend_w, H - kPad};
    } else {
      const double x0 = L.plot.x1 + kLegendGap;
      L.legend = {x0, L.plot.y0, x0 + legend_w, L.plot.y0 + legend_h};
    }
  }
  return L;
}

ChartLayout layout_chart(const ChartSpec& spec) {
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
  cairo_t* cr = cairo_create(s);
  try {
    ChartLayout L = layout_chart(cr, spec);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return L;
  } catch (...) {
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    throw;
  }
}

}  // namespace dplab::plot
