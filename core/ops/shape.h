// Differentiable shape ops (views where possible).
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

Tensor reshape(const Tensor& x, const Shape& shape);  // one dim may be -1
Tensor flatten(const Tensor& x, int start_dim = 1, int end_dim = -1);
Tensor transpose(const Tensor& x, int d0, int d1);
Tensor contiguous(const Tensor& x);

}  // namespace dplab
