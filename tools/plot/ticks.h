// Axis ticks: "nice" steps (1, 2 or 5 times a power of ten) and their labels.
#pragma once
#include <string>
#include <vector>

namespace dplab::plot {

// The finest step nice_ticks uses for [lo, hi]: 1e-12 of the larger magnitude, at least 1e-300.
// Finer steps would need tick indices whose k + 1 rounds to k (two values a float step apart
// near 1e16 once made the tick loop endless) and labels of more digits than a double has.
double finest_step(double lo, double hi);

// Tick positions covering [lo, hi] with about `target` steps of a nice size; `step` receives
// the step. The returned ticks start at or below lo and end at or above hi (multiples of the
// step, so 0 is a tick whenever the range spans it), except that no tick lies beyond the largest
// double; there are always at least two and at most target + 3 (about 20 for ranges near the
// largest double). Throws dplab::Error for an empty or non-finite range. A step below
// `min_step` (when positive) becomes the nice step at or above it: 1 for an axis of whole
// numbers (epochs, ranks), which has no tick at 1.5; a step below finest_step(lo, hi) becomes
// the nice step at or above that.
std::vector<double> nice_ticks(double lo, double hi, int target, double* step, double min_step = 0);

// A tick label with as many decimals as the step needs ("0.25", "40"; at most 17), scientific
// notation for huge or tiny magnitudes ("1.5e+06"), and never "-0".
std::string tick_label(double v, double step);

}  // namespace dplab::plot
