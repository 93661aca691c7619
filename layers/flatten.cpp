#include "dplab/layers/flatten.h"

#include "dplab/core/ops/shape.h"

namespace dplab {

Tensor Flatten::forward(const Tensor& x) {
  return flatten(x, start_, end_);
}

std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_, end_);
}

}  // namespace dplab
