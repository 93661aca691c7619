// PyTorch's default initialisations, drawn from the one Philox stream initialize() threads
// through the model (elements in row-major order).
#pragma once
#include <cmath>

#include "dplab/core/philox.h"
#include "dplab/core/tensor.h"

namespace dplab {

// Fills a contiguous f32 CPU-or-not tensor with U(-bound, bound) (drawn on the host).
void uniform_(Tensor& t, PhiloxStream& rng, double bound);

// kaiming_uniform_(a = sqrt(5)) as nn.Conv2d / nn.Linear use it: gain sqrt(2 / (1 + 5)) times
// sqrt(3 / fan_in), which is exactly 1 / sqrt(fan_in); biases use the same bound.
inline double default_init_bound(int64_t fan_in) {
  return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
}

}  // namespace dplab
