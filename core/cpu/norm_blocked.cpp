// Batch normalisation in nChw16c: the arithmetic of core/cpu/norm.cpp (statistics in double,
// two passes, y = x·a + k), with the channel loop split into blocks of 16 channels that sit
// side by side in memory. One OpenMP task per block; the 16 channels of a block are the 16
// lanes of every inner loop, so a block's H·W·N pixels stream through once per pass.
// Activations (x, y, dy, dx) are f32 or, under autocast, bf16 (element type T): read into f32,
// computed in f32 (sums in float chunks and double, as for f32), written rounded once.
#include <algorithm>
#include <cmath>

#include "dplab/core/cpu/norm_blocked.h"
#include "dplab/core/functors.h"

namespace dplab {
namespace {

constexpr int64_t B = kBlock16c;

struct Geometry {
  int64_t n, cb, hw;                               // batch, channel blocks, pixels per image
  int64_t block_stride() const { return hw * B; }  // floats between (n, cb) and (n, cb + 1)
};

Geometry geometry(const Tensor& x, const Tensor& other, const char* what) {
  DPLAB_CHECK(x.is_blocked() && other.layout() == x.layout() && other.shape() == x.shape(),
              "{}: {} and {} must share the nChw16c layout and shape", what, x.str(), other.str());
  return {x.size(0), x.size(1) / B, x.size(2) * x.size(3)};
}

float at(const float* p, int64_t c, float dflt) {
  return p ? p[c] : dflt;
}

const float* opt(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

// Sums run in float over chunks of kChunk pixels, with the 16 lanes as the vector (GCC
// vectorises these; with double accumulators it emits scalar code, 3-4x slower), and in double
// across chunks: the error of a chunk's float sum is ~kChunk·2^-24 relative at worst.
constexpr int64_t kChunk = 256;

// Σ f(e, j) per lane j of block cb over every image and pixel, e the element's offset.
template <typename F>
void lane_sums(const Geometry& g, int64_t cb, F f, double (&out)[B]) {
  for (int64_t j = 0; j < B; ++j) out[j] = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    const int64_t base = (n * g.cb + cb) * g.block_stride();
    for (int64_t i0 = 0; i0 < g.hw; i0 += kChunk) {
      float acc[B] = {};
      const int64_t i1 = std::min(g.hw, i0 + kChunk);
      for (int64_t i = i0; i < i1; ++i)
#pragma omp simd
        for (int64_t j = 0; j < B; ++j) acc[j] += f(base + i * B + j, j);
      for (int64_t j = 0; j < B; ++j) out[j] += acc[j];
    }
  }
}

// Σx and Σ(x − mean)² per lane of block cb, over every image and pixel.
template <typename T>
void block_stats(const T* x, const Geometry& g, int64_t cb, double (&mean)[B], double (&ssd)[B]) {
  const fn::ToF32<T> ld;
  double s[B];
  lane_sums(
      g, cb, [x, ld](int64_t e, int64_t) { return ld(x[e]); }, s);
  const double m = static_cast<double>(g.n * g.hw);
  float mf[B];
  for (int64_t j = 0; j < B; ++j) mean[j] = s[j] / m, mf[j] = static_cast<float>(mean[j]);
  lane_sums(
      g, cb,
      [x, ld, &mf](int64_t e, int64_t j) {
        const float d = ld(x[e]) - mf[j];
        return d * d;
      },
      ssd);
}

// f(e, j) for every element e of block cb, j its lane, the 16 lanes of a pixel as one vector.
// f captures by value: with references GCC reloads the pointers and does not vectorise.
template <typename F>
void for_block(const Geometry& g, int64_t cb, F f) {
  for (int64_t n = 0; n < g.n; ++n) {
    const int64_t base = (n * g.cb + cb) * g.block_stride();
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t j = 0; j < B; ++j) f(base + i * B + j, j);
  }
}

// y = x·a + k (plus the residual r, then ReLU) per lane over block cb.
template <bool Relu, bool Add, typename T>
void block_affine(const T* x, const T* r, T* y, const Geometry& g, int64_t cb, const float (&a)[B],
                  const float (&k)[B]) {
  const fn::Relu relu;
  const fn::ToF32<T> ld;
  const fn::FromF32<T> st;
  const float* ap = a;
  const float* kp = k;
  for_block(g, cb, [=](int64_t e, int64_t j) {
    float v = ld(x[e]) * ap[j] + kp[j];
    if (Add) v += ld(r[e]);
    y[e] = st(Relu ? relu(v) : v);
  });
}

// r: the residual (then ReLU follows), or null.
template <typename T>
void block_affine(const T* x, const T* r, T* y, const Geometry& g, int64_t cb, const float (&a)[B],
                  const float (&k)[B], bool relu) {
  if (r) return block_affine<true, true>(x, r, y, g, cb, a, k);
  relu ? block_affine<true, false>(x, r, y, g, cb, a, k)
       : block_affine<false, false>(x, r, y, g, cb, a, k);
}

const void* residual_data(const Tensor& x, const Tensor& r) {
  if (!r.defined()) return nullptr;
  geometry(x, r, "batch_norm_add_relu (nChw16c)");
  DPLAB_CHECK(r.dtype() == x.dtype(),
              "batch_norm_add_relu (nChw16c): residual {} must have x's "
              "dtype ({})",
              r.str(), x.str());
  return r.raw_data_any_layout();
}

template <typename T>
void forward_train_impl(const Tensor& x, const Tensor& residual, const Tensor& weight,
                        const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                        float momentum, float eps, Tensor& y, Tensor& save_mean,
                        Tensor& save_invstd, bool relu) {
  const Geometry g = geometry(x, y, "batch_norm (nChw16c)");
  const int64_t m = g.n * g.hw;
  DPLAB_CHECK(m > 0, "batch_norm: empty batch {}", x.str());
  const T* rp = static_cast<const T*>(residual_data(x, residual));
  const T* xp = x.data_any_layout<T>();
  T* yp = y.data_any_layout<T>();
  const float* w = opt(weight);
  const float* b = opt(bias);
  float* rm = running_mean.defined() ? running_mean.data<float>() : nullptr;
  float* rv = running_var.defined() ? running_var.data<float>() : nullptr;
  float* sm = save_mean.data<float>();
  float* si = save_invstd.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t cb = 0; cb < g.cb; ++cb) {
    double mean[B], ssd[B];
    block_stats(xp, g, cb, mean, ssd);
    float a[B], k[B];
    for (int64_t j = 0; j < B; ++j) {
      const int64_t c = cb * B + j;
      const double var = ssd[j] / m;
      const double invstd = 1.0 / std::sqrt(var + eps);
      sm[c] = static_cast<float>(mean[j]);
      si[c] = static_cast<float>(invstd);
      a[j] = static_cast<float>(at(w, c, 1.f) * invstd);
      k[j] = static_cast<float>(at(b, c, 0.f) - mean[j] * at(w, c, 1.f) * invstd);
      if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mean[j]);
      if (rv) {
        const double unbiased = m > 1 ? ssd[j] / (m - 1) : var;
        rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * unbiased);
      }
    }
    block_affine(xp, rp, yp, g, cb, a, k, relu);
  }
}

template <typename T>
void forward_eval_impl(const Tensor& x, const Tensor& residual, const Tensor& weight,
                       const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                       float eps, Tensor& y, bool relu) {
  const Geometry g = geometry(x, y, "batch_norm (nChw16c)");
  const T* rp = static_cast<const T*>(residual_data(x, residual));
  const T* xp = x.data_any_layout<T>();
  T* yp = y.data_any_layout<T>();
  const float* w = opt(weight);
  const float* b = opt(bias);
  const float* rm = running_mean.data<float>();
  const float* rv = running_var.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t cb = 0; cb < g.cb; ++cb) {
    float a[B], k[B];
    for (int64_t j = 0; j < B; ++j) {
      const int64_t c = cb * B + j;
      const double invstd = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
      a[j] = static_cast<float>(at(w, c, 1.f) * invstd);
      k[j] = static_cast<float>(at(b, c, 0.f) - rm[c] * at(w, c, 1.f) * invstd);
    }
    block_affine(xp, rp, yp, g, cb, a, k, relu);
  }
}

// x, y and dy of one dtype, which dx must have too (the op allocates it like x).
bool is_bf16(const Tensor& x) {
  return x.dtype() == DType::bf16;
}

}  // namespace

void blocked_bn_forward_train(const Tensor& x, const Tensor& residual, const Tensor& weight,
                              const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                              float momentum, float eps, Tensor& y, Tensor& save_mean,
                              Tensor& save_invstd, bool relu) {
  DPLAB_CHECK(y.dtype() == x.dtype(), "batch_norm (nChw16c): y {} must have x's dtype ({})",
              y.str(), x.str());
  const auto f = is_bf16(x) ? forward_train_impl<bf16_t> : forward_train_impl<float>;
  f(x, residual, weight, bias, running_mean, running_var, momentum, eps, y, save_mean, save_invstd,
    relu);
}

void blocked_bn_forward_eval(const Tensor& x, const Tensor& residual, const Tensor& weight,
                             const Tensor& bias, const Tensor& running_mean,
                             const Tensor& running_var, float eps, Tensor& y, bool relu) {
  DPLAB_CHECK(y.dtype() == x.dtype(), "batch_norm (nChw16c): y {} must have x's dtype ({})",
              y.str(), x.str());
  const auto f = is_bf16(x) ? forward_eval_impl<bf16_t> : forward_eval_impl<float>;
  f(x, residual, weight, bias, running_mean, running_var, eps, y, relu);
}

namespace {

// Block cb of backward: dz = dy (masked by y > 0 when Relu); dx = a·dz + k1·x + k0 and/or the
// residual's gradient dr = dz. A loop per combination: stores under a condition inside the loop
// keep GCC from vectorising it.
template <bool Relu, bool Dx, bool Dr, typename T>
void block_dx(const T* gp, const T* out, const T* xp, T* dxp, T* drp, const Geometry& g, int64_t cb,
              const float (&a)[B], const float (&k1)[B], const float (&k0)[B]) {
  const fn::ReluBackward mask;
  const fn::ToF32<T> ld;
  const fn::FromF32<T> st;
  const float *ap = a, *k1p = k1, *k0p = k0;
  for_block(g, cb, [=](int64_t e, int64_t j) {
    const float d = Relu ? mask(ld(gp[e]), ld(out[e])) : ld(gp[e]);
    if (Dx) dxp[e] = st(ap[j] * d + k1p[j] * ld(xp[e]) + k0p[j]);
    if (Dr) drp[e] = st(d);
  });
}

template <bool Relu, typename T>
void backward_impl(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                   const Tensor& mean, const Tensor& invstd, bool training, Tensor& dx,
                   Tensor* dresidual, Tensor& dweight, Tensor& dbias) {
  const Geometry g = geometry(x, dy, "batch_norm backward (nChw16c)");
  if (dx.defined()) geometry(x, dx, "batch_norm backward (nChw16c)");
  if (Relu) geometry(x, y, "batch_norm_relu backward (nChw16c)");
  const int64_t m = g.n * g.hw;
  const T* xp = x.data_any_layout<T>();
  const T* gp = dy.data_any_layout<T>();
  const T* out = Relu ? y.data_any_layout<T>() : nullptr;
  const float* w = opt(weight);
  const float* mu = mean.data<float>();
  const float* is = invstd.data<float>();
  T* dxp = dx.defined() ? dx.data_any_layout<T>() : nullptr;
  if (dresidual && dresidual->defined())
    geometry(x, *dresidual, "batch_norm_add_relu backward (nChw16c)");
  T* drp = dresidual && dresidual->defined() ? dresidual->data_any_layout<T>() : nullptr;
  float* dwp = dweight.defined() ? dweight.data<float>() : nullptr;
  float* dbp = dbias.defined() ? dbias.data<float>() : nullptr;
  const fn::ReluBackward mask;
  const fn::ToF32<T> ld;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t cb = 0; cb < g.cb; ++cb) {
    float mc[B];
    for (int64_t j = 0; j < B; ++j) mc[j] = mu[cb * B + j];
    double sum_dy[B] = {}, sum_dy_xc[B] = {};  // Σdy and Σdy·(x − mean)
    for (int64_t n = 0; n < g.n; ++n) {
      const int64_t base = (n * g.cb + cb) * g.block_stride();
      for (int64_t i0 = 0; i0 < g.hw; i0 += kChunk) {
        float acc_dy[B] = {}, acc_dy_xc[B] = {};
        const int64_t i1 = std::min(g.hw, i0 + kChunk);
        for (int64_t i = i0; i < i1; ++i)
#pragma omp simd
          for (int64_t j = 0; j < B; ++j) {
            const int64_t e = base + i * B + j;
            const float d = Relu ? mask(ld(gp[e]), ld(out[e])) : ld(gp[e]);
            acc_dy[j] += d;
            acc_dy_xc[j] += d * (ld(xp[e]) - mc[j]);
          }
        for (int64_t j = 0; j < B; ++j) sum_dy[j] += acc_dy[j], sum_dy_xc[j] += acc_dy_xc[j];
      }
    }
    // training: dx = scale·(dy − Σdy/M − x̂·Σ(dy·x̂)/M) = a·dy + k1·x + k0 per channel
    float a[B], k1[B], k0[B];
    for (int64_t j = 0; j < B; ++j) {
      const int64_t c = cb * B + j;
      const double sum_dy_xhat = sum_dy_xc[j] * is[c];
      if (dwp) dwp[c] = static_cast<float>(sum_dy_xhat);
      if (dbp) dbp[c] = static_cast<float>(sum_dy[j]);
      const double scale = at(w, c, 1.f) * static_cast<double>(is[c]);
      a[j] = static_cast<float>(scale);
      k1[j] = training ? static_cast<float>(-scale * is[c] * sum_dy_xhat / m) : 0.f;
      k0[j] = training ? static_cast<float>(-scale * sum_dy[j] / m - k1[j] * mc[j]) : 0.f;
    }
    if (dxp && drp)
      block_dx<Relu, true, true>(gp, out, xp, dxp, drp, g, cb, a, k1, k0);
    else if (dxp)
      block_dx<Relu, true, false>(gp, out, xp, dxp, drp, g, cb, a, k1, k0);
    else if (drp)
      block_dx<Relu, false, true>(gp, out, xp, dxp, drp, g, cb, a, k1, k0);
  }
}

}  // namespace

void blocked_bn_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                         const Tensor& mean, const Tensor& invstd, bool training, Tensor& dx,
                         Tensor* dresidual, Tensor& dweight, Tensor& dbias) {
  DPLAB_CHECK(dy.dtype() == x.dtype() && (!dx.defined() || dx.dtype() == x.dtype()) &&
                  (!y.defined() || y.dtype() == x.dtype()),
              "batch_norm backward (nChw16c): dy {}, dx and y must have x's dtype ({})", dy.str(),
              x.str());
  const bool relu = y.defined();
  const auto f = is_bf16(x) ? (relu ? backward_impl<true, bf16_t> : backward_impl<false, bf16_t>)
                            : (relu ? backward_impl<true, float> : backward_impl<false, float>);
  f(dy, x, y, weight, mean, invstd, training, dx, dresidual, dweight, dbias);
}

}  // namespace dplab
