// Optimizer updates written once for every backend: the ref loop, the OpenMP loop and the CUDA
// kernels (core/cuda/optim_kernels.cu) all call these functors per element, so the device path runs
// exactly the arithmetic the CPU tests proved. Arithmetic is f32 and in PyTorch's operation order,
// so a dplab step equals torch.optim's bit for bit on the same inputs.
#pragma once
#include <cmath>
#include <cstdint>

#include "dplab/core/hostdevice.h"

namespace dplab {

// torch.optim.SGD for one element:
//   g = grad + weight_decay * p
//   buf = g (first step)  |  buf = momentum * buf + (1 - dampening) * g
//   d = g + momentum * buf (Nesterov)  |  d = buf  |  d = g (momentum == 0)
//   p = p - lr * d
// weight_decay is already masked by the caller (0 for tensors excluded from decay).
struct SgdUpdate {
  float lr;
  float momentum;
  float one_minus_dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer is initialised to g instead of updated

  // buf is ignored (may be null) when momentum == 0.
  DPLAB_HD void operator()(float* p, float grad, float* buf) const {
    float g = grad;
    if (weight_decay != 0.f) g = g + weight_decay * *p;
    if (momentum != 0.f) {
      float b;
      if (first_step) {
        b = g;
      } else {
        b = *buf * momentum;
        b = b + one_minus_dampening * g;
      }
      *buf = b;
      g = nesterov ? g + momentum * b : b;
    }
    *p = *p + (-lr) * g;
  }
};

// ---- LARS (optim/lars.h) ----------------------------------------------------------------------
// The trust ratio of one tensor from its norms (each the f32 rounding of sqrt of the f64 sum of
// squares, as the l2_norm op gives them), in double:
//   trust = eta * ||w|| / (||g|| + wd * ||w|| + eps), 1 when ||w|| == 0 or ||g|| == 0.
DPLAB_HD double lars_trust(float w_norm, float g_norm, double eta, double wd, double eps) {
  if (!(w_norm > 0.f && g_norm > 0.f)) return 1.0;
  const double wn = w_norm, gn = g_norm;
  return eta * wn / (gn + wd * wn + eps);
}

// One LARS element: v = mu * v + c * (g + wd * w), w = w - v with c = lr * trust. It is the SGD
// update run on c * g (rounded to f32 first) with weight decay c * wd, no dampening and lr 1:
// the same operations, in the same order, as LARS did before the fused kernel existed.
struct LarsUpdate {
  float scale;  // f32(lr * trust)
  SgdUpdate sgd;
  DPLAB_HD void operator()(float* p, float grad, float* buf) const { sgd(p, grad * scale, buf); }
};

// lr * trust and the per-element functor of one tensor (every backend builds it this way).
DPLAB_HD LarsUpdate make_lars_update(double lr, double trust, float momentum, double wd,
                                     bool first_step) {
  const double c = lr * trust;
  return LarsUpdate{static_cast<float>(c),
                    SgdUpdate{1.f, momentum, 1.f, static_cast<float>(c * wd), false, first_step}};
}

// ---- DC-S3GD (comm/algorithms/dcs3gd.h; papers/dc-s3gd.txt, Algorithm 1) ----------------------
// A step is two passes over the arena:
//   pass 1 (Dcs3gdAverage + Dcs3gdNormTerms): W̄ += R/N, D = W̄ - W, per-tensor sums of g² and
//          (g⊙g⊙D)² for the dynamic λ (eq. 17);
//   pass 2 (Dcs3gdUpdate): g̃ = g + λ·g⊙g⊙D (eq. 10), v = μv − η(g̃ + wd·W̄) (U, MXNet form),
//          W = W̄ + v (eq. 12), S = v.
// D is not stored: pass 2 recomputes W̄ − W, which gives the same bits as pass 1.

// W̄ += R/N (eq. 8 with the sum R = Σ_j Δw_j from the allreduce); returns D = W̄ − W (eq. 9).
// Division (not multiplication by 1/N) keeps R/N exact for N a power of two, so identical
// updates on every rank give D = 0 exactly.
struct Dcs3gdAverage {
  float n;  // number of ranks
  DPLAB_HD float operator()(float& wbar, float r, float w) const {
    wbar = wbar + r / n;
    return wbar - w;
  }
};

// Per-element terms of the norms in eq. 17: g² and (g⊙g⊙D)², accumulated in double.
struct Dcs3gdNormTerms {
  DPLAB_HD void operator()(float g, float d, double& g2, double& c2) const {
    const double gd = static_cast<double>(g);
    const double c = static_cast<double>(g * g * d);
    g2 += gd * gd;
    c2 += c * c;
  }
};

// λ of eq. 17 from the double sums Σg² (g2) and Σ(g⊙g⊙D)² (c2) of one tensor, or of all tensors
// for the global norm: λ0·‖g‖/‖g⊙g⊙D‖, 0 when the denominator is 0 (D = 0 or g = 0). Double
// arithmetic in a fixed order, so the host and the device get the same bits.
DPLAB_HD double dcs3gd_lambda_value(double g2, double c2, double lambda0) {
  return c2 > 0 ? lambda0 * ::sqrt(g2) / ::sqrt(c2) : 0.0;
}

// The corrected momentum step for one element. `wd` is the scheduled weight decay times the
// tensor's mask (0 for BatchNorm parameters).
struct Dcs3gdUpdate {
  float lambda;    // λ of this tensor (eq. 17)
  float lr;        // η_t
  float momentum;  // μ
  float wd;        // wd_t·m_k
  DPLAB_HD void operator()(float g, float wbar, float& w, float& v, float& s) const {
    const float d = wbar - w;                   // eq. 9 (same bits as pass 1)
    const float gc = g + lambda * (g * g * d);  // eq. 10
    v = momentum * v - lr * (gc + wd * wbar);   // Δw = U(g̃): MXNet momentum SGD
    w = wbar + v;                               // eq. 12: W = W̄ + Δw
    s = v;                                      // the next iteration's send buffer
  }
};

// ---- AdamW (optim/adamw.h) --------------------------------------------------------------------
// torch.optim.AdamW (Loshchilov & Hutter; amsgrad off, maximize off) for one element at step t
// (1-based), in PyTorch's operation order with the scalars PyTorch computes in double and rounds
// to f32 once:
//   p = p * decay                         decay = f32(1 - lr * wd)   (decoupled weight decay)
//   m = m * beta1 + (1 - beta1) * g
//   v = v * beta2 + (1 - beta2) * g * g
//   denom = sqrt(v) / f32(sqrt(1 - beta2^t)) + eps
//   p = p + f32(-lr / (1 - beta1^t)) * (m / denom)
// wd is already masked by the caller (0 for tensors excluded from decay: decay = 1, skipped).
struct AdamWUpdate {
  float decay;  // 1 - lr * wd
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^t)

  DPLAB_HD void operator()(float* p, float grad, float* m, float* v) const {
    float x = *p;
    if (decay != 1.f) x = x * decay;
    const float mm = *m * beta1 + one_minus_beta1 * grad;
    const float vv = *v * beta2 + one_minus_beta2 * grad * grad;
    *m = mm;
    *v = vv;
    const float denom = sqrtf(vv) / bias_correction2_sqrt + eps;
    *p = x + neg_step_size * (mm / denom);
  }
};

// The functor of step t (1-based) from the double hyper-parameters, as torch.optim.AdamW forms
// its scalars (bias corrections and step size in double, one rounding to f32 each).
inline AdamWUpdate make_adamw_update(double lr, double beta1, double beta2, double eps, double wd,
                                     int64_t t) {
  const double bc1 = 1.0 - std::pow(beta1, double(t));
  const double bc2 = 1.0 - std::pow(beta2, double(t));
  return AdamWUpdate{static_cast<float>(1.0 - lr * wd), static_cast<float>(beta1),
                     static_cast<float>(1.0 - beta1),   static_cast<float>(beta2),
                     static_cast<float>(1.0 - beta2),   static_cast<float>(std::sqrt(bc2)),
                     static_cast<float>(eps),           static_cast<float>(-lr / bc1)};
}

// ---- dynamic loss scaling (optim/grad_scaler.h) ----------------------------------------------
// g = g * inv_scale; returns true when g was inf or NaN before (x - x is 0 exactly for finite x
// and NaN for inf and NaN, without depending on a host or device isfinite).
struct AmpUnscale {
  float inv_scale;
  DPLAB_HD bool operator()(float& g) const {
    const bool bad = !(g - g == 0.f);
    g = g * inv_scale;
    return bad;
  }
};

// ---- finiteness (OptimKernels::find_nonfinite; train/loop/nonfinite_guard.h) -----------------
// true for inf and NaN, by the same x - x test as AmpUnscale.
DPLAB_HD bool nonfinite_value(float x) {
  return !(x - x == 0.f);
}

}  // namespace dplab
