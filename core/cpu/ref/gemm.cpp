// Reference GEMM: the textbook triple loop, accumulating in double, then
// c = alpha * sum + beta * c (c not read when beta == 0).
#include "dplab/core/kernels/gemm.h"

namespace dplab {
namespace {

// Element (i, j) of op(t) for a row-major matrix with unit inner stride and row stride ld.
inline float at(const float* t, int64_t ld, bool trans, int64_t i, int64_t j) {
  return trans ? t[j * ld + i] : t[i * ld + j];
}

void check_matrix(const Tensor& t, const char* what) {
  DPLAB_CHECK(t.dim() == 2 && t.dtype() == DType::f32 && (t.size(1) <= 1 || t.stride(1) == 1),
              "gemm: {} must be a 2-D f32 matrix with unit column stride, got {} strides {}", what,
              t.str(), shape_str(t.strides()));
}

void gemm(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  const auto [M, N, K] = gemm_dims(ta, tb, a, b, c);
  const float* A = a.data<float>();
  const float* B = b.data<float>();
  float* C = c.data<float>();
  const int64_t lda = a.stride(0), ldb = b.stride(0), ldc = c.stride(0);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(at(A, lda, ta, i, k)) * at(B, ldb, tb, k, j);
      double out = alpha * acc;
      if (beta != 0.0f) out += static_cast<double>(beta) * C[i * ldc + j];
      C[i * ldc + j] = static_cast<float>(out);
    }
  }
}

void add_row_bias(Tensor& y, const Tensor& b) {
  check_matrix(y, "y");
  DPLAB_CHECK(b.dim() == 1 && b.size(0) == y.size(1) && b.is_contiguous(),
              "add_row_bias: bias {} does not match y {}", b.str(), y.str());
  float* Y = y.data<float>();
  const float* B = b.data<float>();
  for (int64_t i = 0; i < y.size(0); ++i)
    for (int64_t j = 0; j < y.size(1); ++j) Y[i * y.stride(0) + j] += B[j];
}

void sum_rows(const Tensor& dy, Tensor& db) {
  check_matrix(dy, "dy");
  DPLAB_CHECK(db.dim() == 1 && db.size(0) == dy.size(1) && db.is_contiguous(),
              "sum_rows: db {} does not match dy {}", db.str(), dy.str());
  const float* DY = dy.data<float>();
  float* DB = db.data<float>();
  for (int64_t j = 0; j < dy.size(1); ++j) {
    double acc = 0.0;
    for (int64_t i = 0; i < dy.size(0); ++i) acc += DY[i * dy.stride(0) + j];
    DB[j] = static_cast<float>(acc);
  }
}

}  // namespace

GemmDims gemm_dims(bool ta, bool tb, const Tensor& a, const Tensor& b, const Tensor& c) {
  check_matrix(a, "a");
  check_matrix(b, "b");
  check_matrix(c, "c");
  const int64_t M = c.size(0), N = c.size(1);
  const int64_t K = ta ? a.size(0) : a.size(1);
  DPLAB_CHECK((ta ? a.size(1) : a.size(0)) == M && (tb ? b.size(1) : b.size(0)) == K &&
                  (tb ? b.size(0) : b.size(1)) == N,
              "gemm: op(a) {}{} @ op(b) {}{} does not give c {}", shape_str(a.shape()),
              ta ? "^T" : "", shape_str(b.shape()), tb ? "^T" : "", shape_str(c.shape()));
  return {M, N, K};
}

GemmKernels ref_gemm_kernels() {
  GemmKernels k{};
  k.gemm = gemm;
  k.add_row_bias = add_row_bias;
  k.sum_rows = sum_rows;
  return k;
}

}  // namespace dplab
