// Fuzz target: `dplab plot`'s chart layout and drawing (tools/plot/chart.h, ticks.h) on
// arbitrary doubles: NaN, infinities, denormals, the largest doubles, equal values and values a
// float step apart. Any values a series can hold must lay out and draw: no dplab::Error, finite
// axes with at most a few dozen ticks, every finite point inside the plot area, and a cairo
// context without an error. A violation aborts (a finding).
//
// Input: a flags byte, then up to 32 doubles (8 bytes each, native order; a short tail is
// ignored). Flags: bit 0 a band around the line, bit 1 a final point, bit 2 a vertical marker,
// bit 3 a second series (the same y reversed), bit 4 x from the doubles too (pairs x, y; else
// x is 1, 2, 3, ...: epochs); bits 5-7 the tick target for the direct nice_ticks check.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dplab/core/error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/ticks.h"
#include "fuzz_input.h"

namespace {

[[noreturn]] void fail(const char* what, double a = 0, double b = 0) {
  std::fprintf(stderr, "fuzz_plot_layout: %s (%g, %g)\n", what, a, b);
  std::abort();
}

// Ticks finite, increasing and few; those of a y axis enclose it.
void check_ticks(const std::vector<double>& t, double step, size_t most) {
  if (t.size() > most) fail("too many ticks", double(t.size()), step);
  if (!(std::isfinite(step) && step > 0)) fail("bad tick step", step);
  for (size_t k = 0; k < t.size(); ++k) {
    if (!std::isfinite(t[k])) fail("non-finite tick", t[k]);
    if (k > 0 && !(t[k] > t[k - 1])) fail("ticks not increasing", t[k - 1], t[k]);
  }
}

// nice_ticks alone on two of the doubles: a finite lo < hi gives 2 .. target + 3 ticks (about
// 20 near the largest double), anything else a dplab::Error.
void direct_ticks(double lo, double hi, int target) {
  double step = 0;
  std::vector<double> t;
  try {
    t = dplab::plot::nice_ticks(lo, hi, target, &step);
  } catch (const dplab::Error&) {
    if (std::isfinite(lo) && std::isfinite(hi) && lo < hi) fail("nice_ticks refused", lo, hi);
    return;
  }
  if (t.size() < 2) fail("fewer than two ticks", lo, hi);
  check_ticks(t, step, size_t(target) + 24);
  for (double v : t) (void)dplab::plot::tick_label(v, step);
  (void)dplab::plot::tick_label(lo, hi);  // any value and step, NaN and 0 included
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + sizeof(double)) return 0;
  const uint8_t flags = data[0];
  std::vector<double> d(std::min<size_t>((size - 1) / sizeof(double), 32));
  std::memcpy(d.data(), data + 1, d.size() * sizeof(double));
  direct_ticks(d[0], d.size() > 1 ? d[1] : d[0], 1 + (flags >> 5));

  // Strings moved in, not assigned from literals: gcc 12 warns falsely about those (-Wrestrict).
  dplab::plot::ChartSpec spec;
  spec.width = 480;
  spec.height = 320;
  spec.title = std::string("fuzz");
  spec.x_label = std::string("x");
  spec.y_label = std::string("y");
  dplab::plot::Series s;
  s.label = std::string("a");
  const bool pairs = flags & 16;
  for (size_t k = 0; k + (pairs ? 1 : 0) < d.size(); k += pairs ? 2 : 1) {
    s.x.push_back(pairs ? d[k] : double(s.x.size() + 1));
    s.y.push_back(pairs ? d[k + 1] : d[k]);
  }
  if (s.x.empty()) return 0;
  if (flags & 1)
    for (size_t k = 0; k < s.x.size(); ++k) {
      s.lo.push_back(d[(k + 1) % d.size()]);
      s.hi.push_back(d[(k + 2) % d.size()]);
    }
  if (flags & 2) s.final_point = dplab::plot::Series::Final{s.x.back(), d.back(), d[0], d.back()};
  if (flags & 4) s.markers.push_back({s.x[s.x.size() / 2], "stage=2"});
  spec.series.push_back(s);
  if (flags & 8) {
    s.label = std::string("b");
    std::reverse(s.y.begin(), s.y.end());
    spec.series.push_back(s);
  }

  // One scratch surface for every input: draw_chart paints it white first.
  static cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 480, 320);
  static cairo_t* cr = cairo_create(surface);
  dplab::plot::ChartLayout L;
  try {
    L = dplab::plot::layout_chart(cr, spec);
  } catch (const dplab::Error& e) {
    std::fprintf(stderr, "fuzz_plot_layout: layout_chart threw: %s\n", e.what());
    std::abort();
  }
  for (double v : {L.x_lo, L.x_hi, L.y_lo, L.y_hi})
    if (!std::isfinite(v)) fail("non-finite axis end", v);
  if (!(L.x_lo < L.x_hi) || !(L.y_lo < L.y_hi)) fail("empty axis", L.x_lo, L.x_hi);
  check_ticks(L.x_ticks, L.x_step, 64);
  check_ticks(L.y_ticks, L.y_step, 64);
  if (L.y_ticks.size() < 2) fail("fewer than two y ticks", double(L.y_ticks.size()));
  // Every finite point inside the plot area (a hair of rounding allowed).
  for (const auto& series : spec.series)
    for (size_t k = 0; k < series.x.size(); ++k) {
      if (!std::isfinite(series.x[k]) || !std::isfinite(series.y[k])) continue;
      const double px = L.px(series.x[k]), py = L.py(series.y[k]);
      if (!(px >= L.plot.x0 - 1e-6 && px <= L.plot.x1 + 1e-6)) fail("x outside", series.x[k], px);
      if (!(py >= L.plot.y0 - 1e-6 && py <= L.plot.y1 + 1e-6)) fail("y outside", series.y[k], py);
    }
  dplab::plot::draw_chart(cr, spec);
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
    fail(cairo_status_to_string(cairo_status(cr)));  // e.g. "invalid matrix (not invertible)"
  return 0;
}
