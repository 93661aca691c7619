// Fully connected layer and matrix product (PyTorch semantics).
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

// x [N, in], weight [out, in], bias [out] (may be undefined) -> [N, out]
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// a [M, K] @ b [K, N] -> [M, N]
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace dplab
