// Fast batch normalisation for contiguous NCHW: one OpenMP task per channel, contiguous H·W
// inner loops (vectorised), statistics in double (two passes: mean, then squared deviations,
// which stays accurate when |mean| >> std). Activations are f32 or, under autocast, bf16
// (element type T): read into f32, computed in f32, written rounded once. For the blocked nChw16c
// layout the same arithmetic runs per block of 16 channels, one vector lane per channel
// (core/cpu/norm_blocked.cpp). Every kernel comes twice, plain and fused with the ReLU that
// follows the batch norm in a ResNet (template parameter Relu): forward clamps as it writes y;
// backward masks dy by y > 0 as it reads it (fn::Relu and fn::ReluBackward, the functors of the
// stand-alone op), saving the ReLU's own pass over the activation each way; and fused with a
// residual add before that ReLU (template parameter Add; backward writes the residual's
// gradient, the masked dy, in the same pass as dx).
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

// What the loops here take: [N, C, ...] contiguous, f32 or bf16.
bool fast_ok(const Tensor& x) {
  return x.defined() && x.dim() >= 2 && x.is_contiguous() &&
         (x.dtype() == DType::f32 || x.dtype() == DType::bf16);
}

// Every defined tensor fast_ok, of x's dtype and shape.
bool all_fast(const Tensor& x, std::initializer_list<const Tensor*> ts) {
  if (!fast_ok(x)) return false;
  for (const Tensor* t : ts)
    if (t->defined() && (!fast_ok(*t) || t->dtype() != x.dtype() || t->shape() != x.shape()))
      return false;
  return true;
}

Dims dims(const Tensor& x) {
  int64_t hw = 1;
  for (int d = 2; d < x.dim(); ++d) hw *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], hw};
}

const float* opt_data(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

template <typename T>
T* opt_act(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
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

// q = p·a + k (+ r, then ReLU), one channel row of hw elements.
template <bool Relu, bool Add, typename T>
void affine_row(const T* p, const T* r, T* q, int64_t hw, float a, float k) {
  const fn::Relu relu;
  const fn::ToF32<T> ld;
  const fn::FromF32<T> st;
#pragma omp simd
  for (int64_t i = 0; i < hw; ++i) {
    float v = ld(p[i]) * a + k;
    if (Add) v += ld(r[i]);
    q[i] = st(Relu ? relu(v) : v);
  }
}

template <bool Relu, bool Add, typename T>
void train_loops(const Tensor& x, const Tensor& res, const Tensor& weight, const Tensor& bias,
                 Tensor& running_mean, Tensor& running_var, float momentum, float eps, Tensor& y,
                 Tensor& save_mean, Tensor& save_invstd) {
  const Dims d = dims(x);
  const int64_t m = d.n * d.hw;
  DPLAB_CHECK(m > 0, "batch_norm: empty batch {}", x.str());
  const T* xp = x.data<T>();
  const T* rp = opt_act<T>(res);
  T* yp = y.data<T>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  float* rm = running_mean.defined() ? running_mean.data<float>() : nullptr;
  float* rv = running_var.defined() ? running_var.data<float>() : nullptr;
  float* sm = save_mean.data<float>();
  float* si = save_invstd.data<float>();
  const fn::ToF32<T> ld;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t c = 0; c < d.c; ++c) {
    double s = 0;
    for (int64_t n = 0; n < d.n; ++n) {
      const T* p = xp + (n * d.c + c) * d.hw;
      s += chunked_sum(d.hw, [p, ld](int64_t i) { return ld(p[i]); });
    }
    const double mean = s / m;
    const float mf = static_cast<float>(mean);
    double ss = 0;
    for (int64_t n = 0; n < d.n; ++n) {
      const T* p = xp + (n * d.c + c) * d.hw;
      ss += chunked_sum(d.hw, [p, mf, ld](int64_t i) {
        const float dv = ld(p[i]) - mf;
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
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t off = (n * d.c + c) * d.hw;
      affine_row<Relu, Add>(xp + off, Add ? rp + off : nullptr, yp + off, d.hw, a, k);
    }
    if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mean);
    if (rv) {
      const double unbiased = m > 1 ? ss / (m - 1) : var;
      rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * unbiased);
    }
  }
}

template <bool Relu, bool Add, typename T>
void eval_loops(const Tensor& x, const Tensor& res, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const Dims d = dims(x);
  const T* xp = x.data<T>();
  const T* rp = opt_act<T>(res);
  T* yp = y.data<T>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  const float* rm = running_mean.data<float>();
  const float* rv = running_var.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t t = 0; t < d.n * d.c; ++t) {
    const int64_t c = t % d.c;
    const double invstd = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
    const float a = static_cast<float>((w ? w[c] : 1.0) * invstd);
    const float k = static_cast<float>((b ? b[c] : 0.0) - rm[c] * (w ? w[c] : 1.0) * invstd);
    affine_row<Relu, Add>(xp + t * d.hw, Add ? rp + t * d.hw : nullptr, yp + t * d.hw, d.hw, a, k);
  }
}

// One channel row of backward: dz = dy (masked by y > 0 when Relu); dx = a·dz + k1·x + k0 and/or
// dr = dz. A loop per combination: stores under a condition inside the loop measured 1.4x
// slower (GCC no longer vectorises it).
template <bool Relu, bool Dx, bool Dr, typename T>
void dx_row(const T* g, const T* y, const T* x, T* dx, T* dr, int64_t hw, float a, float k1,
            float k0) {
  const fn::ReluBackward mask;
  const fn::ToF32<T> ld;
  const fn::FromF32<T> st;
#pragma omp simd
  for (int64_t i = 0; i < hw; ++i) {
    const float gi = Relu ? mask(ld(g[i]), ld(y[i])) : ld(g[i]);
    if (Dx) dx[i] = st(a * gi + k1 * ld(x[i]) + k0);
    if (Dr) dr[i] = st(gi);
  }
}

// `y` (the fused forward's output) is read only when Relu; dr (the residual's gradient, the
// masked dy) is written when defined.
template <bool Relu, typename T>
void backward_loops(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                    const Tensor& mean, const Tensor& invstd, bool training, Tensor& dx,
                    const Tensor& dr, Tensor& dweight, Tensor& dbias) {
  const Dims d = dims(x);
  const int64_t m = d.n * d.hw;
  const T* xp = x.data<T>();
  const T* g = dy.data<T>();
  const T* out = Relu ? y.data<T>() : nullptr;
  const float* w = opt_data(weight);
  const float* mu = mean.data<float>();
  const float* is = invstd.data<float>();
  T* dxp = opt_act<T>(dx);
  T* drp = opt_act<T>(dr);
  float* dwp = dweight.defined() ? dweight.data<float>() : nullptr;
  float* dbp = dbias.defined() ? dbias.data<float>() : nullptr;
  const fn::ReluBackward mask;
  const fn::ToF32<T> ld;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t c = 0; c < d.c; ++c) {
    const float mc = mu[c];
    double sum_dy = 0, sum_dy_xc = 0;  // Σdy and Σdy·(x − mean)
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t base = (n * d.c + c) * d.hw;
      // Captured by value: with references GCC reloads the pointers and does not vectorise.
      const T* gr = g + base;
      const T* yr = Relu ? out + base : nullptr;
      const T* xr = xp + base;
      auto grad = [gr, yr, mask, ld](int64_t i) {
        return Relu ? mask(ld(gr[i]), ld(yr[i])) : ld(gr[i]);
      };
      sum_dy += chunked_sum(d.hw, grad);
      sum_dy_xc +=
          chunked_sum(d.hw, [grad, xr, ld, mc](int64_t i) { return grad(i) * (ld(xr[i]) - mc); });
    }
    const double sum_dy_xhat = sum_dy_xc * is[c];
    if (dwp) dwp[c] = static_cast<float>(sum_dy_xhat);
    if (dbp) dbp[c] = static_cast<float>(sum_dy);
    if (!dxp && !drp) continue;
    const double scale = (w ? w[c] : 1.0) * is[c];
    // training: dx = scale·(dy − Σdy/M − x̂·Σ(dy·x̂)/M) = a·dy + k1·x + k0 per channel
    const float a = static_cast<float>(scale);
    const float k1 = training ? static_cast<float>(-scale * is[c] * sum_dy_xhat / m) : 0.f;
    const float k0 = training ? static_cast<float>(-scale * sum_dy / m - k1 * mc) : 0.f;
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t base = (n * d.c + c) * d.hw;
      const T* gr = g + base;
      const T* yr = Relu ? out + base : nullptr;
      if (dxp && drp)
        dx_row<Relu, true, true>(gr, yr, xp + base, dxp + base, drp + base, d.hw, a, k1, k0);
      else if (dxp)
        dx_row<Relu, true, false, T>(gr, yr, xp + base, dxp + base, nullptr, d.hw, a, k1, k0);
      else
        dx_row<Relu, false, true, T>(gr, yr, xp + base, nullptr, drp + base, d.hw, a, k1, k0);
    }
  }
}

bool is_bf16(const Tensor& x) {
  return x.dtype() == DType::bf16;
}

template <bool Relu>
void forward_train(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                   Tensor& running_var, float momentum, float eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  if (x.is_blocked())
    return blocked_bn_forward_train(x, Tensor(), weight, bias, running_mean, running_var, momentum,
                                    eps, y, save_mean, save_invstd, Relu);
  if (!all_fast(x, {&y})) {
    const auto f = Relu ? spec().batch_norm_relu_forward_train : spec().batch_norm_forward_train;
    return f(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean, save_invstd);
  }
  const auto f = is_bf16(x) ? train_loops<Relu, false, bf16_t> : train_loops<Relu, false, float>;
  f(x, Tensor(), weight, bias, running_mean, running_var, momentum, eps, y, save_mean, save_invstd);
}

template <bool Relu>
void forward_eval(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  if (x.is_blocked())
    return blocked_bn_forward_eval(x, Tensor(), weight, bias, running_mean, running_var, eps, y,
                                   Relu);
  if (!all_fast(x, {&y})) {
    const auto f = Relu ? spec().batch_norm_relu_forward_eval : spec().batch_norm_forward_eval;
    return f(x, weight, bias, running_mean, running_var, eps, y);
  }
  const auto f = is_bf16(x) ? eval_loops<Relu, false, bf16_t> : eval_loops<Relu, false, float>;
  f(x, Tensor(), weight, bias, running_mean, running_var, eps, y);
}

template <bool Relu>
void backward_impl(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                   const Tensor& mean, const Tensor& invstd, float eps, bool training, Tensor& dx,
                   Tensor& dweight, Tensor& dbias) {
  if (x.is_blocked())
    return blocked_bn_backward(dy, x, Relu ? y : Tensor(), weight, mean, invstd, training, dx,
                               nullptr, dweight, dbias);
  const Tensor no_y;
  if (!all_fast(x, {&dy, Relu ? &y : &no_y, &dx})) {
    if (Relu)
      return spec().batch_norm_relu_backward(dy, x, y, weight, mean, invstd, eps, training, dx,
                                             dweight, dbias);
    return spec().batch_norm_backward(dy, x, weight, mean, invstd, eps, training, dx, dweight,
                                      dbias);
  }
  const auto f = is_bf16(x) ? backward_loops<Relu, bf16_t> : backward_loops<Relu, float>;
  f(dy, x, y, weight, mean, invstd, training, dx, Tensor(), dweight, dbias);
}

void backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
              const Tensor& invstd, float eps, bool training, Tensor& dx, Tensor& dweight,
              Tensor& dbias) {
  backward_impl<false>(dy, x, Tensor(), weight, mean, invstd, eps, training, dx, dweight, dbias);
}

// Batch norm + residual + ReLU: one fused pass each way, blocked or NCHW.
void add_relu_forward_train(const Tensor& x, const Tensor& r, const Tensor& weight,
                            const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                            float momentum, float eps, Tensor& y, Tensor& save_mean,
                            Tensor& save_invstd) {
  if (x.is_blocked())
    return blocked_bn_forward_train(x, r, weight, bias, running_mean, running_var, momentum, eps, y,
                                    save_mean, save_invstd, true);
  if (!all_fast(x, {&r, &y}))
    return spec().batch_norm_add_relu_forward_train(x, r, weight, bias, running_mean, running_var,
                                                    momentum, eps, y, save_mean, save_invstd);
  const auto f = is_bf16(x) ? train_loops<true, true, bf16_t> : train_loops<true, true, float>;
  f(x, r, weight, bias, running_mean, running_var, momentum, eps, y, save_mean, save_invstd);
}

void add_relu_forward_eval(const Tensor& x, const Tensor& r, const Tensor& weight,
                           const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, float eps, Tensor& y) {
  if (x.is_blocked())
    return blocked_bn_forward_eval(x, r, weight, bias, running_mean, running_var, eps, y, true);
  if (!all_fast(x, {&r, &y}))
    return spec().batch_norm_add_relu_forward_eval(x, r, weight, bias, running_mean, running_var,
                                                   eps, y);
  const auto f = is_bf16(x) ? eval_loops<true, true, bf16_t> : eval_loops<true, true, float>;
  f(x, r, weight, bias, running_mean, running_var, eps, y);
}

void add_relu_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, float eps, bool training,
                       Tensor& dx, Tensor& dresidual, Tensor& dweight, Tensor& dbias) {
  if (x.is_blocked())
    return blocked_bn_backward(dy, x, y, weight, mean, invstd, training, dx, &dresidual, dweight,
                               dbias);
  if (!all_fast(x, {&dy, &y, &dx, &dresidual}))
    return spec().batch_norm_add_relu_backward(dy, x, y, weight, mean, invstd, eps, training, dx,
                                               dresidual, dweight, dbias);
  const auto f = is_bf16(x) ? backward_loops<true, bf16_t> : backward_loops<true, float>;
  f(dy, x, y, weight, mean, invstd, training, dx, dresidual, dweight, dbias);
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
