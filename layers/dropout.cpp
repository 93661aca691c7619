#include "dplab/layers/dropout.h"

#include "dplab/core/ops/random.h"

namespace dplab {

Dropout::Dropout(double p, uint64_t seed) : p_(p), seed_(seed) {
  DPLAB_CHECK(p >= 0 && p <= 1, "Dropout: p = {} must be in [0, 1]", p);
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0) return dropout(x, static_cast<float>(p_), false, seed_, 0);
  return dropout(x, static_cast<float>(p_), true, seed_, calls_++);
}

std::string Dropout::extra_repr() const {
  return fmt::format("p={}, inplace=False", p_);
}

}  // namespace dplab
