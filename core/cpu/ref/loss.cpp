// Reference softmax and cross-entropy: one row at a time, accumulation in double, with the
// per-row arithmetic from core/functors.h.
#include <cmath>
#include <limits>

#include "dplab/core/functors.h"
#include "dplab/core/kernels/loss.h"

namespace dplab {

void check_class_targets(const Tensor& target, int64_t num_classes, const char* what) {
  check_dtype(target, DType::i64, what);
  DPLAB_CHECK(target.device().is_cpu(), "{}: target on {} (host check)", what,
              target.device().str());
  const Tensor t = target.contiguous();
  const int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    DPLAB_CHECK(p[i] >= 0 && p[i] < num_classes,
                "{}: target[{}] = {} is outside the class range [0, {})", what, i, p[i],
                num_classes);
}

SoftmaxRows softmax_rows(const Tensor& x, int dim, const char* what) {
  DPLAB_CHECK(dim >= 0 && dim < x.dim(), "{}: dim {} of a {}-d tensor", what, dim, x.dim());
  check_dtype(x, DType::f32, what);
  DPLAB_CHECK(x.is_contiguous(), "{}: {} must be contiguous", what, x.str());
  SoftmaxRows r{1, x.shape()[dim], 1};
  for (int d = 0; d < dim; ++d) r.outer *= x.shape()[d];
  for (int d = dim + 1; d < x.dim(); ++d) r.inner *= x.shape()[d];
  return r;
}

namespace {

void softmax_forward(const Tensor& x, int dim, bool log, Tensor& y) {
  const SoftmaxRows r = softmax_rows(x, dim, "softmax");
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.inner; ++i) {
      const float* p = xp + o * r.c * r.inner + i;
      float* q = yp + o * r.c * r.inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < r.c; ++c) mx = std::max(mx, p[c * r.inner]);
      double s = 0;
      for (int64_t c = 0; c < r.c; ++c) s += std::exp(static_cast<double>(p[c * r.inner]) - mx);
      const float ls = static_cast<float>(std::log(s));
      for (int64_t c = 0; c < r.c; ++c) {
        const float z = p[c * r.inner] - mx;  // shifted first: precise for large logits
        q[c * r.inner] = log ? z - ls : std::exp(z - ls);
      }
    }
}

void softmax_backward(const Tensor& y, const Tensor& dy, int dim, bool log, Tensor& dx) {
  const SoftmaxRows r = softmax_rows(y, dim, "softmax backward");
  const float* yp = y.data<float>();
  const float* g = dy.data<float>();
  float* dxp = dx.data<float>();
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.c * r.inner + i;
      double s = 0;  // log: Σ dy;  softmax: Σ dy·y
      for (int64_t c = 0; c < r.c; ++c) {
        const int64_t k = base + c * r.inner;
        s += log ? g[k] : static_cast<double>(g[k]) * yp[k];
      }
      for (int64_t c = 0; c < r.c; ++c) {
        const int64_t k = base + c * r.inner;
        dxp[k] = log ? static_cast<float>(g[k] - std::exp(yp[k]) * s)
                     : static_cast<float>(yp[k] * (g[k] - s));
      }
    }
}

void check_ce(const Tensor& logits, const Tensor& target) {
  DPLAB_CHECK(logits.dim() == 2, "cross_entropy: logits {} must be [N, C]", logits.str());
  check_dtype(logits, DType::f32, "cross_entropy logits");
  DPLAB_CHECK(logits.is_contiguous(), "cross_entropy: logits {} must be contiguous", logits.str());
  check_shape(target, {logits.shape()[0]}, "cross_entropy target");
  check_class_targets(target, logits.shape()[1], "cross_entropy");
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, float smoothing,
                           Tensor& loss, Tensor& lse) {
  check_ce(logits, target);
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  const Tensor t = target.contiguous();
  const int64_t* tp = t.data<int64_t>();
  const float* xp = logits.data<float>();
  float* lp = lse.data<float>();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = xp + i * nc;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < nc; ++c) mx = std::max(mx, row[c]);
    double s = 0, sum_shifted = 0;
    for (int64_t c = 0; c < nc; ++c) {
      s += std::exp(static_cast<double>(row[c]) - mx);
      sum_shifted += row[c] - mx;
    }
    const float ls = static_cast<float>(std::log(s));
    lp[i] = fn::log_sum_exp(mx, static_cast<float>(s));  // saved for backward
    total +=
        fn::cross_entropy_row(ls, row[tp[i]] - mx, static_cast<float>(sum_shifted), nc, smoothing);
  }
  loss.data<float>()[0] = n > 0 ? static_cast<float>(total / n) : 0.f;
}

void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse,
                            float smoothing, float grad_scale, Tensor& dlogits) {
  check_ce(logits, target);
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  const Tensor t = target.contiguous();
  const int64_t* tp = t.data<int64_t>();
  const float* xp = logits.data<float>();
  const float* lp = lse.data<float>();
  float* dp = dlogits.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < nc; ++c)
      dp[i * nc + c] =
          fn::cross_entropy_grad(xp[i * nc + c], lp[i], c, tp[i], nc, smoothing, grad_scale);
}

}  // namespace

LossKernels ref_loss_kernels() {
  LossKernels k{};
  k.softmax_forward = softmax_forward;
  k.softmax_backward = softmax_backward;
  k.cross_entropy_forward = cross_entropy_forward;
  k.cross_entropy_backward = cross_entropy_backward;
  return k;
}

}  // namespace dplab
