// Fast softmax and cross-entropy for contiguous f32: rows in parallel, f32 row arithmetic
// (the row length is the class count, so f32 sums are accurate enough), the same per-row
// formulas (core/functors.h) as the reference.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dplab/core/functors.h"
#include "dplab/core/kernels/loss.h"

namespace dplab {
namespace {

const LossKernels& spec() {
  static const LossKernels k = ref_loss_kernels();
  return k;
}

constexpr int64_t kParallelMin = 16384;

void softmax_forward(const Tensor& x, int dim, bool log, Tensor& y) {
  // Only the last-dim (row) case is specialised; other dims are rare (and cheap) here.
  if (!(x.is_contiguous() && y.is_contiguous() && x.dtype() == DType::f32 && dim == x.dim() - 1))
    return spec().softmax_forward(x, dim, log, y);
  const int64_t nc = x.shape()[dim], rows = nc ? x.numel() / nc : 0;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = xp + r * nc;
    float* q = yp + r * nc;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < nc; ++c) mx = std::max(mx, p[c]);
    float s = 0;
    for (int64_t c = 0; c < nc; ++c) s += std::exp(p[c] - mx);
    const float ls = std::log(s);
    if (log) {
#pragma omp simd
      for (int64_t c = 0; c < nc; ++c) q[c] = (p[c] - mx) - ls;
    } else {
      for (int64_t c = 0; c < nc; ++c) q[c] = std::exp((p[c] - mx) - ls);
    }
  }
}

void softmax_backward(const Tensor& y, const Tensor& dy, int dim, bool log, Tensor& dx) {
  if (!(y.is_contiguous() && dy.is_contiguous() && dx.is_contiguous() && y.dtype() == DType::f32 &&
        dy.dtype() == DType::f32 && dim == y.dim() - 1))
    return spec().softmax_backward(y, dy, dim, log, dx);
  const int64_t nc = y.shape()[dim], rows = nc ? y.numel() / nc : 0;
  const float* yp = y.data<float>();
  const float* g = dy.data<float>();
  float* dxp = dx.data<float>();
#pragma omp parallel for schedule(static) if (y.numel() > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = yp + r * nc;
    const float* gr = g + r * nc;
    float* dr = dxp + r * nc;
    float s = 0;
    if (log) {
      for (int64_t c = 0; c < nc; ++c) s += gr[c];
      for (int64_t c = 0; c < nc; ++c) dr[c] = gr[c] - std::exp(yr[c]) * s;
    } else {
      for (int64_t c = 0; c < nc; ++c) s += gr[c] * yr[c];
#pragma omp simd
      for (int64_t c = 0; c < nc; ++c) dr[c] = yr[c] * (gr[c] - s);
    }
  }
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, float smoothing,
                           Tensor& loss, Tensor& lse) {
  if (!(logits.dim() == 2 && logits.is_contiguous() && logits.dtype() == DType::f32 &&
        target.is_contiguous() && target.dtype() == DType::i64))
    return spec().cross_entropy_forward(logits, target, smoothing, loss, lse);
  check_shape(target, {logits.shape()[0]}, "cross_entropy target");
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  check_class_targets(target, nc, "cross_entropy");
  const int64_t* tp = target.data<int64_t>();
  const float* xp = logits.data<float>();
  float* lp = lse.data<float>();
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static) if (logits.numel() > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = xp + i * nc;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < nc; ++c) mx = std::max(mx, row[c]);
    float s = 0, sum_shifted = 0;
    for (int64_t c = 0; c < nc; ++c) {
      s += std::exp(row[c] - mx);
      sum_shifted += row[c] - mx;
    }
    const float ls = std::log(s);
    lp[i] = fn::log_sum_exp(mx, static_cast<float>(s));  // saved for backward
    total += fn::cross_entropy_row(ls, row[tp[i]] - mx, sum_shifted, nc, smoothing);
  }
  loss.data<float>()[0] = n > 0 ? static_cast<float>(total / n) : 0.f;
}

void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse,
                            float smoothing, float grad_scale, Tensor& dlogits) {
  if (!(logits.dim() == 2 && logits.is_contiguous() && logits.dtype() == DType::f32 &&
        target.is_contiguous() && target.dtype() == DType::i64 && dlogits.is_contiguous()))
    return spec().cross_entropy_backward(logits, target, lse, smoothing, grad_scale, dlogits);
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  check_class_targets(target, nc, "cross_entropy");
  const int64_t* tp = target.data<int64_t>();
  const float* xp = logits.data<float>();
  const float* lp = lse.data<float>();
  float* dp = dlogits.data<float>();
#pragma omp parallel for schedule(static) if (logits.numel() > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < nc; ++c)
      dp[i * nc + c] =
          fn::cross_entropy_grad(xp[i * nc + c], lp[i], c, tp[i], nc, smoothing, grad_scale);
}

}  // namespace

LossKernels cpu_loss_kernels() {
  LossKernels k{};
  k.softmax_forward = softmax_forward;
  k.softmax_backward = softmax_backward;
  k.cross_entropy_forward = cross_entropy_forward;
  k.cross_entropy_backward = cross_entropy_backward;
  return k;
}

}  // namespace dplab
