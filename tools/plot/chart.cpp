#include "dplab/tools/plot/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "dplab/core/error.h"

namespace dplab::plot {
namespace {

constexpr Rgb kBlack{0, 0, 0}, kGrid{225, 225, 225}, kWhite{255, 255, 255}, kFrame{120, 120, 120};
constexpr int kFont = 2;  // font magnification for labels
constexpr double kLine = 2.5;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// Widens an empty or zero-width range so that the axis has a scale.
void widen(Range& r) {
  if (r.empty()) {
    r.lo = 0;
    r.hi = 1;
  } else if (r.lo == r.hi) {
    const double d = r.lo == 0 ? 1 : std::abs(r.lo) * 0.1;
    r.lo -= d;
    r.hi += d;
  }
}

}  // namespace

Rgb series_color(size_t i) {
  static constexpr std::array<Rgb, 10> kPalette{{{31, 119, 180},
                                                 {255, 127, 14},
                                                 {44, 160, 44},
                                                 {214, 39, 40},
                                                 {148, 103, 189},
                                                 {140, 86, 75},
                                                 {227, 119, 194},
                                                 {127, 127, 127},
                                                 {188, 189, 34},
                                                 {23, 190, 207}}};
  return kPalette[i % kPalette.size()];
}

std::vector<double> nice_ticks(double lo, double hi, int target, double* step) {
  DPLAB_CHECK(hi > lo && std::isfinite(lo) && std::isfinite(hi), "nice_ticks: bad range [{}, {}]",
              lo, hi);
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double s = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      s = m * mag;
      break;
    }
  std::vector<double> t;
  const double first = std::floor(lo / s + 1e-9), last = std::ceil(hi / s - 1e-9);
  for (double k = first; k <= last + 0.5; k += 1) t.push_back(k * s == 0 ? 0.0 : k * s);
  if (step) *step = s;
  return t;
}

std::string tick_label(double v, double step) {
  if (std::abs(v) >= 1e6 || (v != 0 && std::abs(v) < 1e-4)) return fmt::format("{:.3g}", v);
  const int decimals = std::max(0, int(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", v, decimals);
}

ChartLayout layout_chart(const ChartSpec& spec) {
  Range xr, yr;
  for (const auto& s : spec.series) {
    DPLAB_CHECK(s.x.size() == s.y.size(), "series '{}': {} x values but {} y values", s.label,
                s.x.size(), s.y.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      xr.add(s.x[i]);
      yr.add(s.y[i]);
    }
    for (const auto& m : s.markers) xr.add(m.x);
  }
  widen(xr);
  widen(yr);
  ChartLayout L;
  L.x_ticks = nice_ticks(xr.lo, xr.hi, 8, &L.x_step);
  L.y_ticks = nice_ticks(yr.lo, yr.hi, 6, &L.y_step);
  // The x axis spans the data exactly (epochs 1..N fill the width); the y axis extends to the
  // enclosing ticks so that the curves never touch the frame.
  L.x_lo = xr.lo;
  L.x_hi = xr.hi;
  L.y_lo = L.y_ticks.front();
  L.y_hi = L.y_ticks.back();
  std::erase_if(L.x_ticks, [&](double t) {
    return t < L.x_lo - 1e-9 * L.x_step || t > L.x_hi + 1e-9 * L.x_step;
  });
  int label_w = 0;
  for (double t : L.y_ticks)
    label_w = std::max(label_w, Canvas::text_width(tick_label(t, L.y_step), kFont));
  const int th = Canvas::text_height(kFont);
  L.left = 8 + (spec.y_label.empty() ? 0 : th + 8) + label_w + 8;
  L.top = spec.title.empty() ? 14 : 14 + th + 10;
  L.right = spec.width - 1 - 16 - Canvas::text_width(tick_label(L.x_hi, L.x_step), kFont) / 2;
  L.bottom = spec.height - 1 - 8 - th - 6 - (spec.x_label.empty() ? 0 : th + 8);
  DPLAB_CHECK(L.right - L.left >= 40 && L.bottom - L.top >= 40,
              "figure {}x{} is too small for its labels (plot area {}x{})", spec.width, spec.height,
              L.right - L.left, L.bottom - L.top);
  return L;
}

Canvas render_chart(const ChartSpec& spec) {
  const ChartLayout L = layout_chart(spec);
  Canvas c(spec.width, spec.height);
  const int th = Canvas::text_height(kFont);

  // Grid and tick labels.
  for (double t : L.y_ticks) {
    const int y = int(std::lround(L.py(t)));
    c.line(L.left, y, L.right, y, 1, kGrid);
    c.line(L.left - 5, y, L.left, y, 1, kBlack);
    const std::string s = tick_label(t, L.y_step);
    c.text(L.left - 8 - Canvas::text_width(s, kFont), y - th / 2, s, kFont, kBlack);
  }
  for (double t : L.x_ticks) {
    const int x = int(std::lround(L.px(t)));
    c.line(x, L.top, x, L.bottom, 1, kGrid);
    c.line(x, L.bottom, x, L.bottom + 5, 1, kBlack);
    const std::string s = tick_label(t, L.x_step);
    c.text(x - Canvas::text_width(s, kFont) / 2, L.bottom + 8, s, kFont, kBlack);
  }
  // Frame.
  c.line(L.left, L.top, L.left, L.bottom, 1, kFrame);
  c.line(L.left, L.bottom, L.right, L.bottom, 1, kFrame);
  c.line(L.right, L.top, L.right, L.bottom, 1, kFrame);
  c.line(L.left, L.top, L.right, L.top, 1, kFrame);

  // Axis labels and title.
  if (!spec.x_label.empty())
    c.text((L.left + L.right - Canvas::text_width(spec.x_label, kFont)) / 2,
           spec.height - 1 - 6 - th, spec.x_label, kFont, kBlack);
  if (!spec.y_label.empty())
    c.text_up(8, (L.top + L.bottom - Canvas::text_width(spec.y_label, kFont)) / 2, spec.y_label,
              kFont, kBlack);
  if (!spec.title.empty())
    c.text((spec.width - Canvas::text_width(spec.title, kFont)) / 2, 10, spec.title, kFont, kBlack);

  // Markers under the curves, then the curves. Marker texts go on successive rows (cycling
  // every 8) so that nearby markers do not print over each other.
  int text_row = 0;
  for (size_t i = 0; i < spec.series.size(); ++i)
    for (const auto& m : spec.series[i].markers) {
      const double x = L.px(m.x);
      c.dashed_line(x, L.top + 1, x, L.bottom - 1, 1.5, series_color(i));
      if (!m.text.empty()) {
        // Right of the marker, or left of it when the text would leave the plot.
        const int tw = Canvas::text_width(m.text, 1);
        const int tx = int(x) + 4 + tw <= L.right - 2 ? int(x) + 4 : int(x) - 4 - tw;
        c.text(tx, L.top + 4 + (text_row++ % 8) * (Canvas::text_height(1) + 3), m.text, 1,
               series_color(i));
      }
    }
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const auto& s = spec.series[i];
    const Rgb col = series_color(i);
    for (size_t k = 0; k < s.x.size(); ++k) {
      const double x = L.px(s.x[k]), y = L.py(s.y[k]);
      if (k > 0)
        c.line(L.px(s.x[k - 1]), L.py(s.y[k - 1]), x, y, kLine, col);
      else if (s.x.size() == 1)
        c.line(x - 3, y, x + 3, y, kLine, col);  // a lone point
    }
  }

  // Legend: in the plot corner holding the fewest data points, on a white box.
  std::vector<const Series*> named;
  for (const auto& s : spec.series)
    if (!s.label.empty()) named.push_back(&s);
  if (!named.empty()) {
    int lw = 0;
    for (const auto* s : named) lw = std::max(lw, Canvas::text_width(s->label, kFont));
    const int row = th + 6, bw = 12 + 24 + 6 + lw + 10, bh = 8 + int(named.size()) * row;
    std::array<std::pair<int, int>, 4> corners{{{L.right - 8 - bw, L.top + 8},
                                                {L.left + 8, L.top + 8},
                                                {L.right - 8 - bw, L.bottom - 8 - bh},
                                                {L.left + 8, L.bottom - 8 - bh}}};
    size_t best = 0;
    int best_count = std::numeric_limits<int>::max();
    for (size_t k = 0; k < corners.size(); ++k) {
      const auto [x0, y0] = corners[k];
      int count = 0;
      for (const auto& s : spec.series)
        for (size_t j = 0; j < s.x.size(); ++j) {
          const double x = L.px(s.x[j]), y = L.py(s.y[j]);
          count += x >= x0 - 6 && x <= x0 + bw + 6 && y >= y0 - 6 && y <= y0 + bh + 6;
        }
      if (count < best_count) {
        best_count = count;
        best = k;
      }
    }
    const auto [x0, y0] = corners[best];
    c.fill_rect(x0, y0, x0 + bw, y0 + bh, kWhite);
    c.line(x0, y0, x0 + bw, y0, 1, kFrame);
    c.line(x0, y0 + bh, x0 + bw, y0 + bh, 1, kFrame);
    c.line(x0, y0, x0, y0 + bh, 1, kFrame);
    c.line(x0 + bw, y0, x0 + bw, y0 + bh, 1, kFrame);
    size_t k = 0;
    for (size_t i = 0; i < spec.series.size(); ++i) {
      if (spec.series[i].label.empty()) continue;
      const int y = y0 + 6 + int(k++) * row;
      c.line(x0 + 12, y + th / 2, x0 + 36, y + th / 2, kLine, series_color(i));
      c.text(x0 + 42, y, spec.series[i].label, kFont, kBlack);
    }
  }
  return c;
}

}  // namespace dplab::plot
