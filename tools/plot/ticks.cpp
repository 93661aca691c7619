#include "dplab/tools/plot/ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dplab/core/error.h"

namespace dplab::plot {

std::vector<double> nice_ticks(double lo, double hi, int target, double* step, double min_step) {
  DPLAB_CHECK(hi > lo && std::isfinite(lo) && std::isfinite(hi), "nice_ticks: bad range [{}, {}]",
              lo, hi);
  const double raw = std::max((hi - lo) / std::max(1, target), min_step);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double s = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) {
      s = m * mag;
      break;
    }
  // Ticks are integer multiples of the step (k * s, not an accumulated sum), so that 0.1 * 3
  // style rounding does not drift along the axis.
  std::vector<double> t;
  const double first = std::floor(lo / s + 1e-9), last = std::ceil(hi / s - 1e-9);
  for (double k = first; k <= last + 0.5; k += 1) t.push_back(k == 0 ? 0.0 : k * s);
  if (step) *step = s;
  return t;
}

std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-6) v = 0;  // k * s rounding and "-0"
  if (std::abs(v) >= 1e6 || (v != 0 && std::abs(v) < 1e-4)) return fmt::format("{:.3g}", v);
  const int decimals = std::max(0, int(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace dplab::plot
