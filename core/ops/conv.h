// 2-D convolution, NCHW, weights [out, in/groups, kh, kw], PyTorch semantics.
#pragma once
#include <array>

#include "dplab/core/tensor.h"

namespace dplab {

struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

// bias may be undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& opt = {});

}  // namespace dplab
