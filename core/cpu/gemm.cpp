// Fast CPU GEMM: oneDNN's row-major dnnl_sgemm (threads from OpenMP); bias helpers are
// OpenMP loops whose per-element summation order does not depend on the thread count.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "dplab/core/kernels/gemm.h"

namespace dplab {
namespace {

// Leading dimension for dnnl_sgemm: the row stride, or the row length when there is only one
// row (its stride is then meaningless and may be smaller than the row).
int64_t leading_dim(const Tensor& t) {
  return std::max<int64_t>({t.size(0) > 1 ? t.stride(0) : t.size(1), t.size(1), 1});
}

void gemm(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  const auto [M, N, K] = gemm_dims(ta, tb, a, b, c);
  if (M == 0 || N == 0) return;
  float* C = c.data<float>();
  const int64_t ldc = leading_dim(c);
  if (K == 0) {  // empty sum: c = beta * c
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, a.data<float>(), leading_dim(a),
                 b.data<float>(), leading_dim(b), beta, C, ldc);
  DPLAB_CHECK(st == dnnl_success, "dnnl_sgemm failed with status {} (M={} N={} K={})",
              static_cast<int>(st), M, N, K);
}

void add_row_bias(Tensor& y, const Tensor& b) {
  DPLAB_CHECK(y.dim() == 2 && y.dtype() == DType::f32 && b.dim() == 1 && b.size(0) == y.size(1) &&
                  b.is_contiguous() && b.dtype() == DType::f32 &&
                  (y.size(1) <= 1 || y.stride(1) == 1),
              "add_row_bias: bias {} does not fit y {}", b.str(), y.str());
  float* Y = y.data<float>();
  const float* B = b.data<float>();
  const int64_t M = y.size(0), N = y.size(1), ld = leading_dim(y);
#pragma omp parallel for schedule(static) if (M * N > 65536)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) Y[i * ld + j] += B[j];
}

void sum_rows(const Tensor& dy, Tensor& db) {
  DPLAB_CHECK(dy.dim() == 2 && dy.dtype() == DType::f32 && db.dim() == 1 &&
                  db.size(0) == dy.size(1) && db.is_contiguous() && db.dtype() == DType::f32 &&
                  (dy.size(1) <= 1 || dy.stride(1) == 1),
              "sum_rows: db {} does not fit dy {}", db.str(), dy.str());
  const float* DY = dy.data<float>();
  float* DB = db.data<float>();
  const int64_t M = dy.size(0), N = dy.size(1), ld = leading_dim(dy);
  // Columns are split over threads in blocks of 64; each block walks the rows in order, so
  // every column is summed in the same order whatever the thread count.
  constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(static) if (M * N > 65536)
  for (int64_t j0 = 0; j0 < N; j0 += kBlock) {
    const int64_t j1 = std::min(N, j0 + kBlock);
    float acc[kBlock] = {};
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += DY[i * ld + j];
    for (int64_t j = j0; j < j1; ++j) DB[j] = acc[j - j0];
  }
}

}  // namespace

GemmKernels cpu_gemm_kernels() {
  GemmKernels k{};
  k.gemm = gemm;
  k.add_row_bias = add_row_bias;
  k.sum_rows = sum_rows;
  return k;
}

}  // namespace dplab
