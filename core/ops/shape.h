// Differentiable shape ops (views where possible).
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

Tensor reshape(const Tensor& x, const Shape& shape);  // one dim may be -1
Tensor flatten(const Tensor& x, int start_dim = 1, int end_dim = -1);
Tensor transpose(const Tensor& x, int d0, int d1);
Tensor contiguous(const Tensor& x);
// x in `layout` (core/tensor.h): nChw16c for an f32 [N, C, H, W] CPU tensor with C % 16 == 0,
// nhwc for a float [N, C, H, W] tensor on any device, or strided (NCHW-contiguous). The gradient
// passes through unchanged in value. nChw16c is a CPU memory format: a tensor on another device
// comes back strided.
Tensor to_layout(const Tensor& x, Layout layout);

}  // namespace dplab
