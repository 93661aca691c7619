// Random ops; randomness from Philox keyed by (seed, stream), so results do not depend on
// thread count.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

// Inverted dropout: in training, zero each element with probability p and scale the rest by
// 1/(1-p); identity in eval. Element i's draw is a function of (seed, stream, i).
Tensor dropout(const Tensor& x, float p, bool training, uint64_t seed, uint64_t stream);

}  // namespace dplab
