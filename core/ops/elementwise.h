// Element-wise differentiable ops. Binary ops broadcast like numpy/PyTorch. Float inputs;
// results are f32 unless stated.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& x, float s);
Tensor mul_scalar(const Tensor& x, float s);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor square(const Tensor& x);
Tensor relu(const Tensor& x);
// relu(a + b) in one pass (a residual block's output); the gradient of each input is the
// upstream gradient where the output is positive, summed to its shape.
Tensor add_relu(const Tensor& a, const Tensor& b);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// Differentiable dtype conversion between f32, bf16 and f16 (gradient converted back).
Tensor cast(const Tensor& x, DType dtype);

// In place, no autograd: acc += alpha * g (acc f32; g any float dtype). Gradient accumulation
// and optimizers use it.
void add_(Tensor& acc, const Tensor& g, float alpha = 1.0f);
// In place, no autograd: x *= s.
void mul_(Tensor& x, float s);
// In place, no autograd: t += v for an integer (i64 or i32) tensor, on t's device (counters).
void add_int_(Tensor& t, int64_t v);

}  // namespace dplab
