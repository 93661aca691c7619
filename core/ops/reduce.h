// Reductions and norms (differentiable unless stated).
#pragma once
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

Tensor sum(const Tensor& x);  // all elements -> scalar (shape {})
Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor max(const Tensor& x);                      // all elements -> scalar
Tensor l2_norm(const Tensor& x);                  // sqrt(sum x^2) -> scalar
Tensor argmax(const Tensor& x, int dim);          // i64, no gradient
// No autograd, f32 accumulation in double: for optimizers (LARS) and metrics.
double sum_of_squares(const Tensor& x);

}  // namespace dplab
