// Matrix-product kernels: row-major single-precision GEMM and the bias helpers of a fully
// connected layer.
//
// Conventions: every tensor is a 2-D (or 1-D for biases) f32 tensor whose last dim has unit
// stride (rows may be padded: the leading dimension is stride(0)); outputs are preallocated.
//
// Dtypes per backend (any other combination throws, naming it):
// - ref, cpu: f32 only.
// - cuda (cuBLAS, core/cuda/gemm.cpp), gemm (a, b, c): f32/f32/f32; bf16/bf16 with c bf16 or
//   f32; f16/f16 with c f16 or f32. Accumulation and alpha/beta are f32
//   (CUBLAS_COMPUTE_32F; f32 products never use TF32). add_row_bias: y f32/bf16/f16 with b of
//   y's dtype or f32; sum_rows: dy f32/bf16/f16 with db of dy's dtype or f32.
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
