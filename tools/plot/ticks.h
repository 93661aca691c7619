// Axis ticks: "nice" steps (1, 2 or 5 times a power of ten) and their labels.
#pragma once
#include <string>
#include <vector>

namespace dplab::plot {

// Tick positions covering [lo, hi] with about `target` steps of a nice size; `step` receives
// the step. The returned ticks start at or below lo and end at or above hi (multiples of the
// step, so 0 is a tick whenever the range spans it). Throws dplab::Error for an empty or
// non-finite range. A step below `min_step` (when positive) becomes the nice step at or above
// it: 1 for an axis of whole numbers (epochs, ranks), which has no tick at 1.5.
std::vector<double> nice_ticks(double lo, double hi, int target, double* step, double min_step = 0);

// A tick label with as many decimals as the step needs ("0.25", "40"), scientific notation
// for huge or tiny magnitudes ("1.5e+06"), and never "-0".
std::string tick_label(double v, double step);

}  // namespace dplab::plot
