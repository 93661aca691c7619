// Element-wise differentiable ops.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

// a + b (same shape). Differentiable.
Tensor add(const Tensor& a, const Tensor& b);
// acc += g in place (no autograd; used for gradient accumulation). acc is f32.
void add_(Tensor& acc, const Tensor& g, float alpha = 1.0f);

}  // namespace dplab
