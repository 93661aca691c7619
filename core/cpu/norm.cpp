// Fast batch normalisation for contiguous f32 NCHW: one OpenMP task per channel, contiguous
// H·W inner loops (vectorised), statistics in double (two passes: mean, then squared
// deviations, which stays accurate when |mean| >> std). For the blocked nChw16c layout the
// same arithmetic runs per block of 16 channels, one vector lane per channel
// (core/cpu/norm_blocked.cpp). Every kernel comes twice, plain and fused with the ReLU that
// follows the batch norm in a ResNet (template parameter Relu): forward clamps as it writes y;
// backward masks dy by y > 0 as it reads it (fn::Relu and fn::ReluBackward, the functors of the
// stand-alone op), saving the ReLU's own pass over the activation each way.
#include <algorithm>
#include <cmath>

#include "dplab/core/cpu/norm_blocked.h"
#include "dplab/core/functors.h"
#include "dplab/core/kernels/norm.h"

namespace dplab {
namespace {

const NormKernels& spec() {
  static const NormKernels k = ref_norm_kernels();
  return k;
}

struct Dims {
  int64_t n, c, hw;
};

bool fast_ok(const Tensor& x) {
  return x.dim() >= 2 && x.is_contiguous() && x.dtype() == DType::f32;
}

Dims dims(const Tensor& x) {
  int64_t hw = 1;
  for (int d = 2; d < x.dim(); ++d) hw *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], hw};
}

const float* opt_data(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

// Σ f(i) over i in [0, n): float sums over chunks of kChunk (vectorised: GCC turns a float
// simd reduction into vector code, a double one fed by floats into scalar code, 3-4x slower),
// added up in double, so a chunk's rounding is at most ~kChunk·2^-24 relative.
constexpr int64_t kChunk = 256;
template <typename F>
double chunked_sum(int64_t n, F f) {
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t i1 = std::min(n, i0 + kChunk);
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = i0; i < i1; ++i) acc += f(i);
    total += acc;
  }
  return total;
}

// y = relu(y + r), contiguous f32 (fn::AddRelu, the functor of the stand-alone op).
void add_relu_in_place(Tensor& y, const Tensor& r) {
  float* yp = y.data<float>();
  const float* rp = r.data<float>();
  const int64_t n = y.numel();
  const fn::AddRelu f;
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) yp[i] = f(yp[i], rp[i]);
}

// dz = dy where y > 0, else 0 (fn::ReluBackward), contiguous f32.
void relu_mask(const Tensor& dy, const Tensor& y, Tensor& dz) {
  const float* g = dy.data<float>();
  const float* out = y.data<float>();
  float* d = dz.data<float>();
  const int64_t n = dy.numel();
  const fn::ReluBackward f;
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) d[i] = f(g[i], out[i]);
}

template <bool Relu>
void forward_train(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                   Tensor& running_var, float momentum, float eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  if (x.is_blocked())
    return blocked_bn_forward_train(x, Tensor(), weight, bias, running_mean, running_var, momentum,
                                    eps, y, save_mean, save_invstd, Relu);
  if (!fast_ok(x) || !y.is_contiguous()) {
    const auto f = Relu ? spec().batch_norm_relu_forward_train : spec().batch_norm_forward_train;
    return f(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean, save_invstd);
  }
  const Dims d = dims(x);
  const int64_t m = d.n * d.hw;
  DPLAB_CHECK(m > 0, "batch_norm: empty batch {}", x.str());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  float* rm = running_mean.defined() ? running_mean.data<float>() : nullptr;
  float* rv = running_var.defined() ? running_var.data<float>() : nullptr;
  float* sm = save_mean.data<float>();
  float* si = save_invstd.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t c = 0; c < d.c; ++c) {
    double s = 0;
    for (int64_t n = 0; n < d.n; ++n) {
      const float* p = xp + (n * d.c + c) * d.hw;
      s += chunked_sum(d.hw, [p](int64_t i) { return p[i]; });
    }
    const double mean = s / m;
    const float mf = static_cast<float>(mean);
    double ss = 0;
    for (int64_t n = 0; n < d.n; ++n) {
      const float* p = xp + (n * d.c + c) * d.hw;
      ss += chunked_sum(d.hw, [p, mf](int64_t i) {
        const float dv = p[i] - mf;
        return dv * dv;
      });
    }
    const double var = ss / m;
    const double invstd = 1.0 / std::sqrt(var + eps);
    sm[c] = static_cast<float>(mean);
    si[c] = static_cast<float>(invstd);
    // y = x·a + k with a = w·invstd, k = b − mean·a: one multiply-add per element.
    const float a = static_cast<float>((w ? w[c] : 1.0) * invstd);
    const float k = static_cast<float>((b ? b[c] : 0.0) - mean * (w ? w[c] : 1.0) * invstd);
    const fn::Relu relu;
    for (int64_t n = 0; n < d.n; ++n) {
      const float* p = xp + (n * d.c + c) * d.hw;
      float* q = yp + (n * d.c + c) * d.hw;
#pragma omp simd
      for (int64_t i = 0; i < d.hw; ++i) q[i] = Relu ? relu(p[i] * a + k) : p[i] * a + k;
    }
    if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mean);
    if (rv) {
      const double unbiased = m > 1 ? ss / (m - 1) : var;
      rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * unbiased);
    }
  }
}

template <bool Relu>
void forward_eval(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  if (x.is_blocked())
    return blocked_bn_forward_eval(x, Tensor(), weight, bias, running_mean, running_var, eps, y,
                                   Relu);
  if (!fast_ok(x) || !y.is_contiguous()) {
    const auto f = Relu ? spec().batch_norm_relu_forward_eval : spec().batch_norm_forward_eval;
    return f(x, weight, bias, running_mean, running_var, eps, y);
  }
  const Dims d = dims(x);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  const float* rm = running_mean.data<float>();
  const float* rv = running_var.data<float>();
  const fn::Relu relu;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t t = 0; t < d.n * d.c; ++t) {
    const int64_t c = t % d.c;
    const double invstd = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
    const float a = static_cast<float>((w ? w[c] : 1.0) * invstd);
    const float k = static_cast<float>((b ? b[c] : 0.0) - rm[c] * (w ? w[c] : 1.0) * invstd);
    const float* p = xp + t * d.hw;
    float* q = yp + t * d.hw;
#pragma omp simd
    for (int64_t i = 0; i < d.hw; ++i) q[i] = Relu ? relu(p[i] * a + k) : p[i] * a + k;
  }
}

// `y` (the fused forward's output) is read only when Relu.
template <bool Relu>
void backward_impl(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                   const Tensor& mean, const Tensor& invstd, float eps, bool training, Tensor& dx,
                   Tensor& dweight, Tensor& dbias) {
  if (x.is_blocked())
    return blocked_bn_backward(dy, x, Relu ? y : Tensor(), weight, mean, invstd, training, dx,
                               nullptr, dweight, dbias);
  if (!fast_ok(x) || !fast_ok(dy) || (Relu && !fast_ok(y)) ||
      (dx.defined() && !dx.is_contiguous())) {
    if (Relu)
      return spec().batch_norm_relu_backward(dy, x, y, weight, mean, invstd, eps, training, dx,
                                             dweight, dbias);
    return spec().batch_norm_backward(dy, x, weight, mean, invstd, eps, training, dx, dweight,
                                      dbias);
  }
  const Dims d = dims(x);
  const int64_t m = d.n * d.hw;
  const float* xp = x.data<float>();
  const float* g = dy.data<float>();
  const float* out = Relu ? y.data<float>() : nullptr;
  const float* w = opt_data(weight);
  const float* mu = mean.data<float>();
  const float* is = invstd.data<float>();
  float* dxp = dx.defined() ? dx.data<float>() : nullptr;
  float* dwp = dweight.defined() ? dweight.data<float>() : nullptr;
  float* dbp = dbias.defined() ? dbias.data<float>() : nullptr;
  const fn::ReluBackward mask;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t c = 0; c < d.c; ++c) {
    const float mc = mu[c];
    double sum_dy = 0, sum_dy_xc = 0;  // Σdy and Σdy·(x − mean)
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t base = (n * d.c + c) * d.hw;
      auto grad = [&](int64_t i) { return Relu ? mask(g[base + i], out[base + i]) : g[base + i]; };
      sum_dy += chunked_sum(d.hw, grad);
      sum_dy_xc += chunked_sum(d.hw, [&](int64_t i) { return grad(i) * (xp[base + i] - mc); });
    }
    const double sum_dy_xhat = sum_dy_xc * is[c];
    if (dwp) dwp[c] = static_cast<float>(sum_dy_xhat);
    if (dbp) dbp[c] = static_cast<float>(sum_dy);
    if (!dxp) continue;
    const double scale = (w ? w[c] : 1.0) * is[c];
    // training: dx = scale·(dy − Σdy/M − x̂·Σ(dy·x̂)/M) = a·dy + k1·x + k0 per channel
    const float a = static_cast<float>(scale);
    const float k1 = training ? static_cast<float>(-scale * is[c] * sum_dy_xhat / m) : 0.f;
    const float k0 = training ? static_cast<float>(-scale * sum_dy / m - k1 * mc) : 0.f;
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t base = (n * d.c + c) * d.hw;
#pragma omp simd
      for (int64_t i = 0; i < d.hw; ++i) {
        const float gi = Relu ? mask(g[base + i], out[base + i]) : g[base + i];
        dxp[base + i] = a * gi + k1 * xp[base + i] + k0;
      }
    }
  }
}

void backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
              const Tensor& invstd, float eps, bool training, Tensor& dx, Tensor& dweight,
              Tensor& dbias) {
  backward_impl<false>(dy, x, Tensor(), weight, mean, invstd, eps, training, dx, dweight, dbias);
}

// Batch norm + residual + ReLU. Blocked: one fused pass each way. NCHW f32: the batch norm
// kernel, then y = relu(y + r) in place (forward), dr = dy masked by y, then the batch norm
// backward of dr (backward): a pass more than fused, as before the fusion. Other inputs (bf16 in
// NCHW): the reference.
bool dense_f32_pair(const Tensor& a, const Tensor& b) {
  return fast_ok(a) && fast_ok(b) && a.shape() == b.shape();
}

void add_relu_forward_train(const Tensor& x, const Tensor& r, const Tensor& weight,
                            const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                            float momentum, float eps, Tensor& y, Tensor& save_mean,
                            Tensor& save_invstd) {
  if (x.is_blocked())
    return blocked_bn_forward_train(x, r, weight, bias, running_mean, running_var, momentum, eps, y,
                                    save_mean, save_invstd, true);
  if (!dense_f32_pair(x, r) || !y.is_contiguous())
    return spec().batch_norm_add_relu_forward_train(x, r, weight, bias, running_mean, running_var,
                                                    momentum, eps, y, save_mean, save_invstd);
  forward_train<false>(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean,
                       save_invstd);
  add_relu_in_place(y, r);
}

void add_relu_forward_eval(const Tensor& x, const Tensor& r, const Tensor& weight,
                           const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, float eps, Tensor& y) {
  if (x.is_blocked())
    return blocked_bn_forward_eval(x, r, weight, bias, running_mean, running_var, eps, y, true);
  if (!dense_f32_pair(x, r) || !y.is_contiguous())
    return spec().batch_norm_add_relu_forward_eval(x, r, weight, bias, running_mean, running_var,
                                                   eps, y);
  forward_eval<false>(x, weight, bias, running_mean, running_var, eps, y);
  add_relu_in_place(y, r);
}

void add_relu_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, float eps, bool training,
                       Tensor& dx, Tensor& dresidual, Tensor& dweight, Tensor& dbias) {
  if (x.is_blocked())
    return blocked_bn_backward(dy, x, y, weight, mean, invstd, training, dx, &dresidual, dweight,
                               dbias);
  if (!dense_f32_pair(dy, y) || !fast_ok(x) || (dx.defined() && !dx.is_contiguous()))
    return spec().batch_norm_add_relu_backward(dy, x, y, weight, mean, invstd, eps, training, dx,
                                               dresidual, dweight, dbias);
  Tensor dz =
      dresidual.defined() && dresidual.is_contiguous() ? dresidual : Tensor::empty(dy.shape());
  relu_mask(dy, y, dz);
  backward_impl<false>(dz, x, Tensor(), weight, mean, invstd, eps, training, dx, dweight, dbias);
  if (dresidual.defined() && dresidual.impl_ptr() != dz.impl_ptr()) dresidual.copy_(dz);
}

}  // namespace

NormKernels cpu_norm_kernels() {
  NormKernels k{};
  k.batch_norm_forward_train = forward_train<false>;
  k.batch_norm_forward_eval = forward_eval<false>;
  k.batch_norm_backward = backward;
  k.batch_norm_relu_forward_train = forward_train<true>;
  k.batch_norm_relu_forward_eval = forward_eval<true>;
  k.batch_norm_relu_backward = backward_impl<true>;
  k.batch_norm_add_relu_forward_train = add_relu_forward_train;
  k.batch_norm_add_relu_forward_eval = add_relu_forward_eval;
  k.batch_norm_add_relu_backward = add_relu_backward;
  return k;
}

}  // namespace dplab
