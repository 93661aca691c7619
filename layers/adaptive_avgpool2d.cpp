#include "dplab/layers/adaptive_avgpool2d.h"

#include "dplab/core/ops/pool.h"

namespace dplab {

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::array<int64_t, 2> output_size) : size_(output_size) {
  DPLAB_CHECK(size_[0] >= 1 && size_[1] >= 1,
              "AdaptiveAvgPool2d: output size ({}, {}) must be positive", size_[0], size_[1]);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return adaptive_avg_pool2d(x, size_);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return fmt::format("output_size=({}, {})", size_[0], size_[1]);
}

}  // namespace dplab
