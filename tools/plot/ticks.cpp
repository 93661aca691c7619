#include "dplab/tools/plot/ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "dplab/core/error.h"

namespace dplab::plot {

double finest_step(double lo, double hi) {
  // 1e-12 of the magnitude keeps every tick index k = v / step below 2^40, where k + 1 is exact
  // and labels stay readable; 1e-300 keeps the step a normal number (log10 and division of
  // denormals lose their precision).
  return std::max(std::max(std::abs(lo), std::abs(hi)) * 1e-12, 1e-300);
}

std::vector<double> nice_ticks(double lo, double hi, int target, double* step, double min_step) {
  DPLAB_CHECK(hi > lo && std::isfinite(lo) && std::isfinite(hi),
              "nice_ticks: bad range [{}, {}]: expected finite lo < hi", lo, hi);
  constexpr double kMax = std::numeric_limits<double>::max();
  // hi - lo overflows for ranges wider than the largest double; the halves' difference cannot.
  // Steps above kMax / 10 would leave no room for the 10 * magnitude below.
  const double raw = std::max({std::min((hi / 2 - lo / 2) / std::max(1, target) * 2, kMax / 10),
                               min_step, finest_step(lo, hi)});
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double s = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) {
      s = m * mag;
      break;
    }
  // Ticks are integer multiples of the step (k * s, not an accumulated sum), so that 0.1 * 3
  // style rounding does not drift along the axis. Multiples beyond the largest double are left
  // out (the ticks then end inside a range that reaches it).
  const double bottom = std::ceil(-kMax / s), top = std::floor(kMax / s);
  double first = std::max(std::floor(lo / s + 1e-9), bottom);
  double last = std::min(std::ceil(hi / s - 1e-9), top);
  if (last <= first) {  // a range far narrower than the step: a tick on either side of it
    if (first < top)
      last = first + 1;
    else
      first = last - 1;
  }
  // s >= raw: about `target` steps, at most 20 past kMax / 10, a few more for rounding; the
  // bound is a guard, not a limit that real ranges meet.
  DPLAB_CHECK(last - first >= 0 && last - first <= 1000, "nice_ticks: {} ticks of {} for [{}, {}]",
              last - first + 1, s, lo, hi);
  std::vector<double> t;
  for (int64_t k = 0; k <= int64_t(last - first); ++k) {
    const double v = (first + double(k)) * s;
    t.push_back(v == 0 ? 0.0 : v);
  }
  if (step) *step = s;
  return t;
}

std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-6) v = 0;  // k * s rounding and "-0"
  if (std::abs(v) >= 1e6 || (v != 0 && std::abs(v) < 1e-4)) return fmt::format("{:.3g}", v);
  // At most 17 decimals (all a double has): a step of 0 or a denormal asks for infinitely many.
  const double d = std::ceil(-std::log10(step) - 1e-9);
  const int decimals = std::isnan(d) ? 0 : int(std::clamp(d, 0.0, 17.0));
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace dplab::plot
