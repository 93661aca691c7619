// CUDA gemm family: products through cuBLAS, bias helpers as kernels (gemm_kernels.cu).
//
// Row-major through column-major cuBLAS: a row-major [R, C] matrix with row stride ld is, read
// column-major with leading dimension ld, its transpose [C, R]. So c = op(a) @ op(b) in
// row-major is c^T = op(b)^T @ op(a)^T in column-major, i.e. one cuBLAS call with the operands
// swapped, m = N, n = M, the same trans flags, and ld = stride(0) of each matrix.
//
// Precision: every call uses CUBLAS_COMPUTE_32F (f32 accumulation, never
// CUBLAS_COMPUTE_32F_FAST_TF32) on a handle in CUBLAS_DEFAULT_MATH (cublas_handle.h): f32
// products are not rounded to TF32, so they agree with the f32 CPU path to float rounding.
//
// Accepted dtype combinations of gemm (a, b, c) — anything else throws naming the combination:
//   f32,  f32,  f32
//   bf16, bf16, bf16 | f32      (f32 accumulation; c rounded to bf16 or kept in f32)
//   f16,  f16,  f16  | f32      (likewise)
// add_row_bias(y, b): y f32/bf16/f16, b the dtype of y or f32.
// sum_rows(dy, db): dy f32/bf16/f16, db the dtype of dy or f32 (double accumulation).
#include <cublas_v2.h>

#include <algorithm>
#include <climits>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/cublas_api.h"
#include "dplab/core/cuda/cublas_handle.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/launch_gemm.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/kernels/gemm.h"

namespace dplab {
namespace {

bool is_float_dtype(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

void check_matrix(const Tensor& t, const char* what, const char* kernel) {
  DPLAB_CHECK(t.defined() && t.dim() == 2 && (t.size(1) <= 1 || t.stride(1) == 1),
              "CUDA {}: {} must be a 2-D matrix with unit column stride, got {} strides {}", kernel,
              what, t.defined() ? t.str() : "undefined",
              t.defined() ? shape_str(t.strides()) : "-");
  DPLAB_CHECK(t.device().is_cuda(), "CUDA {}: {} {} is not on a CUDA device", kernel, what,
              t.str());
}

// Leading dimension for cuBLAS: stride(0), except that a matrix with at most one row may carry
// any row stride, while cuBLAS insists on ld >= max(1, columns).
int64_t leading_dim(const Tensor& t) {
  const int64_t cols = std::max<int64_t>(t.size(1), 1);
  return t.size(0) <= 1 ? std::max(t.stride(0), cols) : t.stride(0);
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      break;
  }
  DPLAB_FAIL("CUDA gemm: dtype {} has no cuBLAS type here", dtype_name(t));
}

int to_int(int64_t v, const char* what) {
  DPLAB_CHECK(v >= 0 && v <= INT_MAX, "CUDA gemm: {} = {} exceeds cuBLAS's int range", what, v);
  return static_cast<int>(v);
}

void gemm(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  check_matrix(a, "a", "gemm");
  check_matrix(b, "b", "gemm");
  check_matrix(c, "c", "gemm");
  const DType at = a.dtype(), bt = b.dtype(), ct = c.dtype();
  const bool ok =
      (at == DType::f32 && bt == DType::f32 && ct == DType::f32) ||
      ((at == DType::bf16 || at == DType::f16) && bt == at && (ct == at || ct == DType::f32));
  DPLAB_CHECK(ok,
              "CUDA gemm: unsupported dtype combination a {}, b {}, c {} (accepted: all f32; "
              "a and b both bf16 or both f16 with c of their dtype or f32)",
              dtype_name(at), dtype_name(bt), dtype_name(ct));
  DPLAB_CHECK(a.device() == c.device() && b.device() == c.device(),
              "CUDA gemm: a {}, b {} and c {} are on different devices", a.str(), b.str(), c.str());
  const int64_t M = c.size(0), N = c.size(1);
  const int64_t K = ta ? a.size(0) : a.size(1);
  DPLAB_CHECK((ta ? a.size(1) : a.size(0)) == M && (tb ? b.size(1) : b.size(0)) == K &&
                  (tb ? b.size(0) : b.size(1)) == N,
              "CUDA gemm: op(a) {}{} @ op(b) {}{} does not give c {}", shape_str(a.shape()),
              ta ? "^T" : "", shape_str(b.shape()), tb ? "^T" : "", shape_str(c.shape()));
  if (M == 0 || N == 0) return;
  const int dev = c.device().index;
  cuda::ScopedDevice guard(dev);
  const int64_t ldc = leading_dim(c);
  if (K == 0) {
    // An empty sum: c = beta * c (c not read when beta == 0), without asking cuBLAS about k = 0.
    DPLAB_CUDA_CHECK(
        cuda::launch_scale_matrix(c.raw_data(), ct, M, N, ldc, beta, cuda::launch_stream(dev)));
    return;
  }
  const int64_t lda = leading_dim(a), ldb = leading_dim(b);
  const int m = to_int(N, "N"), n = to_int(M, "M"), k = to_int(K, "K");
  const int ilda = to_int(lda, "lda"), ildb = to_int(ldb, "ldb"), ildc = to_int(ldc, "ldc");
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  // alpha and beta are host floats: the scale type of CUBLAS_COMPUTE_32F.
  DPLAB_CUBLAS_CHECK(cuda::cublas().gemm_ex(cuda::cublas_handle(dev), op_b, op_a, m, n, k, &alpha,
                                            b.raw_data(), cuda_type(bt), ildb, a.raw_data(),
                                            cuda_type(at), ilda, &beta, c.raw_data(), cuda_type(ct),
                                            ildc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void check_vector(const Tensor& v, int64_t n, const Tensor& m, const char* what,
                  const char* kernel) {
  DPLAB_CHECK(v.defined() && v.dim() == 1 && v.size(0) == n && v.is_contiguous(),
              "CUDA {}: {} {} must be contiguous [{}] to match {}", kernel, what,
              v.defined() ? v.str() : "undefined", n, m.str());
  DPLAB_CHECK(v.device() == m.device(), "CUDA {}: {} {} is not on the device of {}", kernel, what,
              v.str(), m.str());
  DPLAB_CHECK(v.dtype() == m.dtype() || v.dtype() == DType::f32,
              "CUDA {}: unsupported dtype combination matrix {}, vector {} (the vector must be "
              "the matrix's dtype or f32)",
              kernel, dtype_name(m.dtype()), dtype_name(v.dtype()));
}

void add_row_bias(Tensor& y, const Tensor& b) {
  check_matrix(y, "y", "add_row_bias");
  DPLAB_CHECK(is_float_dtype(y.dtype()), "CUDA add_row_bias: y {} must be f32, bf16 or f16",
              y.str());
  check_vector(b, y.size(1), y, "bias", "add_row_bias");
  const int dev = y.device().index;
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_add_row_bias(y.raw_data(), y.dtype(), y.size(0), y.size(1),
                                             leading_dim(y), b.raw_data(), b.dtype(),
                                             cuda::launch_stream(dev)));
}

void sum_rows(const Tensor& dy, Tensor& db) {
  check_matrix(dy, "dy", "sum_rows");
  DPLAB_CHECK(is_float_dtype(dy.dtype()), "CUDA sum_rows: dy {} must be f32, bf16 or f16",
              dy.str());
  check_vector(db, dy.size(1), dy, "db", "sum_rows");
  const int dev = dy.device().index;
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_sum_rows(dy.raw_data(), dy.dtype(), dy.size(0), dy.size(1),
                                         leading_dim(dy), db.raw_data(), db.dtype(),
                                         cuda::launch_stream(dev)));
}

}  // namespace

GemmKernels cuda_gemm_kernels() {
  GemmKernels k{};
  k.gemm = gemm;
  k.add_row_bias = add_row_bias;
  k.sum_rows = sum_rows;
  return k;
}

}  // namespace dplab
