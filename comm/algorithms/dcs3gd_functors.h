// Element-wise arithmetic of one DC-S3GD step (papers/dc-s3gd.txt, Algorithm 1), as functors the
// CPU loops in dcs3gd.cpp call and a CUDA kernel can call later, so both paths run the same
// rounding. A step is two passes over the arena:
//   pass 1 (Dcs3gdAverage + Dcs3gdNormTerms): W̄ += R/N, D = W̄ - W, per-tensor sums of g² and
//          (g⊙g⊙D)² for the dynamic λ (eq. 17);
//   pass 2 (Dcs3gdUpdate): g̃ = g + λ·g⊙g⊙D (eq. 10), v = μv − η(g̃ + wd·W̄) (U, MXNet form),
//          W = W̄ + v (eq. 12), S = v.
// D is not stored: pass 2 recomputes W̄ − W, which gives the same bits as pass 1.
#pragma once
#include "dplab/core/hostdevice.h"

namespace dplab {

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

}  // namespace dplab
