// Reductions and norms (differentiable unless stated).
#pragma once
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

Tensor sum(const Tensor& x);  // all elements -> scalar (shape {})
Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor max(const Tensor& x);              // all elements -> scalar; gradient to the first maximum
Tensor l2_norm(const Tensor& x);          // sqrt(sum x^2) -> scalar
Tensor argmax(const Tensor& x, int dim);  // i64, no gradient
// No autograd, f32 accumulation in double: for optimizers (LARS) and metrics.
double sum_of_squares(const Tensor& x);
// No autograd: sums x down to `shape`, which must broadcast to x.shape() (the gradient of a
// broadcast). Returns x itself when the shapes already match.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace dplab
