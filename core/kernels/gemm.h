// Matrix-product kernels: row-major single-precision GEMM and the bias helpers of a fully
// connected layer.
//
// Conventions: every tensor is a 2-D (or 1-D for biases) f32 tensor whose last dim has unit
// stride (rows may be padded: the leading dimension is stride(0)); outputs are preallocated.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct GemmKernels {
  // c = alpha * op(a) @ op(b) + beta * c, op(t) = t or t^T per trans flag.
  // op(a) is [M, K], op(b) is [K, N], c is [M, N]. With beta == 0, c is not read (NaNs in c do
  // not propagate), as in BLAS.
  void (*gemm)(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
               float beta, Tensor& c);
  // y [M, N] += b [N] broadcast over rows.
  void (*add_row_bias)(Tensor& y, const Tensor& b);
  // db [N] = sum over rows of dy [M, N] (overwrites db).
  void (*sum_rows)(const Tensor& dy, Tensor& db);
};

// Checks a, b, c (2-D f32, unit column stride) and that op(a) @ op(b) fits c; returns M, N, K.
struct GemmDims {
  int64_t M, N, K;
};
GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c);

GemmKernels ref_gemm_kernels();
GemmKernels cpu_gemm_kernels();
GemmKernels cuda_gemm_kernels();

}  // namespace dplab
