// Pooling, NCHW, PyTorch semantics (ceil_mode, count_include_pad, padding <= kernel/2).
#pragma once
#include <array>

#include "dplab/core/tensor.h"

namespace dplab {

struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{0, 0};  // 0 = same as kernel
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};  // max pool only
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg pool only
};

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);

}  // namespace dplab
