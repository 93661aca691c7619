// Reference convolution: the definition as plain loops, accumulating in double.
//   y[n, oc, oh, ow] = b[oc] + sum_{c in group(oc), kh, kw}
//                      x[n, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[oc, c - g*Cin_g, kh, kw]
// (out-of-range input positions are the zero padding). Each backward kernel is written as a
// gather over the outputs it depends on, so every output element is written by one iteration
// of the outer loops: that makes the same loops safe to run with OpenMP (omp_conv_kernels, the
// cpu backend's fallback) by flipping the template flag.
#include "dplab/core/kernels/conv.h"
#include "dplab/core/cpu/ref/f32_compute.h"

namespace dplab {
namespace {

struct Geometry {
  int64_t N, C, H, W;  // input
  int64_t O, OH, OW;   // output channels and extent
  int64_t KH, KW;      // kernel
  int64_t G, Cg, Og;   // groups, input and output channels per group
};

Geometry geometry(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  Geometry g{};
  g.N = x.size(0), g.C = x.size(1), g.H = x.size(2), g.W = x.size(3);
  g.O = w.size(0), g.KH = w.size(2), g.KW = w.size(3);
  g.OH = y.size(2), g.OW = y.size(3);
  g.G = p.groups, g.Cg = g.C / p.groups, g.Og = g.O / p.groups;
  DPLAB_CHECK(w.size(1) == g.Cg && y.size(1) == g.O && y.size(0) == g.N,
              "conv2d kernel: inconsistent shapes x {} w {} y {} groups {}", shape_str(x.shape()),
              shape_str(w.shape()), shape_str(y.shape()), p.groups);
  return g;
}

// Below this many multiply-adds a parallel region costs more than it saves (and on a busy
// machine a descheduled thread stalls the whole team).
constexpr int64_t kMinParallelWork = 1 << 15;

template <bool Parallel>
void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const Conv2dParams& p) {
  const Geometry g = geometry(x, w, y, p);
  const float* X = x.data<float>();
  const float* Wt = w.data<float>();
  const float* B = b.defined() ? b.data<float>() : nullptr;
  float* Y = y.data<float>();
  const bool par = Parallel && g.N * g.O * g.OH * g.OW * g.Cg * g.KH * g.KW > kMinParallelWork;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t oc = 0; oc < g.O; ++oc) {
      const int64_t grp = oc / g.Og;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double acc = B ? B[oc] : 0.0;
          for (int64_t ci = 0; ci < g.Cg; ++ci) {
            const int64_t c = grp * g.Cg + ci;
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
                if (iw < 0 || iw >= g.W) continue;
                acc += static_cast<double>(X[((n * g.C + c) * g.H + ih) * g.W + iw]) *
                       Wt[((oc * g.Cg + ci) * g.KH + kh) * g.KW + kw];
              }
            }
          }
          Y[((n * g.O + oc) * g.OH + oh) * g.OW + ow] = static_cast<float>(acc);
        }
      }
    }
  }
}

// Input position ih is touched by output oh through kernel tap kh iff
// oh*sh - ph + kh*dh == ih, i.e. oh = (ih + ph - kh*dh) / sh when that divides exactly.
inline bool source_index(int64_t i, int64_t pad, int64_t k, int64_t dil, int64_t stride,
                         int64_t out_extent, int64_t* o) {
  const int64_t t = i + pad - k * dil;
  if (t < 0 || t % stride != 0) return false;
  *o = t / stride;
  return *o < out_extent;
}

template <bool Parallel>
void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  const Geometry g = geometry(dx, w, dy, p);
  const float* DY = dy.data<float>();
  const float* Wt = w.data<float>();
  float* DX = dx.data<float>();
  const bool par = Parallel && g.N * g.C * g.H * g.W * g.Og * g.KH * g.KW > kMinParallelWork;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t c = 0; c < g.C; ++c) {
      const int64_t grp = c / g.Cg, ci = c % g.Cg;
      for (int64_t ih = 0; ih < g.H; ++ih) {
        for (int64_t iw = 0; iw < g.W; ++iw) {
          double acc = 0.0;
          for (int64_t oi = 0; oi < g.Og; ++oi) {
            const int64_t oc = grp * g.Og + oi;
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              int64_t oh;
              if (!source_index(ih, p.pad_h, kh, p.dilation_h, p.stride_h, g.OH, &oh)) continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                int64_t ow;
                if (!source_index(iw, p.pad_w, kw, p.dilation_w, p.stride_w, g.OW, &ow)) continue;
                acc += static_cast<double>(DY[((n * g.O + oc) * g.OH + oh) * g.OW + ow]) *
                       Wt[((oc * g.Cg + ci) * g.KH + kh) * g.KW + kw];
              }
            }
          }
          DX[((n * g.C + c) * g.H + ih) * g.W + iw] = static_cast<float>(acc);
        }
      }
    }
  }
}

template <bool Parallel>
void backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                     const Conv2dParams& p) {
  const Geometry g = geometry(x, dw, dy, p);
  const float* X = x.data<float>();
  const float* DY = dy.data<float>();
  float* DW = dw.data<float>();
  const bool par = Parallel && g.N * g.O * g.OH * g.OW * g.Cg * g.KH * g.KW > kMinParallelWork;
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t oc = 0; oc < g.O; ++oc) {
    for (int64_t ci = 0; ci < g.Cg; ++ci) {
      const int64_t c = (oc / g.Og) * g.Cg + ci;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          double acc = 0.0;
          for (int64_t n = 0; n < g.N; ++n) {
            for (int64_t oh = 0; oh < g.OH; ++oh) {
              const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
                if (iw < 0 || iw >= g.W) continue;
                acc += static_cast<double>(DY[((n * g.O + oc) * g.OH + oh) * g.OW + ow]) *
                       X[((n * g.C + c) * g.H + ih) * g.W + iw];
              }
            }
          }
          DW[((oc * g.Cg + ci) * g.KH + kh) * g.KW + kw] = static_cast<float>(acc);
        }
      }
    }
  }
  if (!db.defined()) return;
  float* DB = db.data<float>();
#pragma omp parallel for schedule(static) if (par)
  for (int64_t oc = 0; oc < g.O; ++oc) {
    double acc = 0.0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t i = 0; i < g.OH * g.OW; ++i) acc += DY[(n * g.O + oc) * g.OH * g.OW + i];
    DB[oc] = static_cast<float>(acc);
  }
}

// bf16 activations (autocast) and blocked layouts: the f32 loops above, as f32_compute.h says.
template <bool Parallel>
void any_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y,
                 const Conv2dParams& p) {
  Tensor yf = ref::f32_out(y);
  forward<Parallel>(ref::as_f32(x), ref::as_f32(w), b, yf, p);
  ref::write_back(yf, y);
}
template <bool Parallel>
void any_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  Tensor dxf = ref::f32_out(dx);
  backward_data<Parallel>(ref::as_f32(dy), ref::as_f32(w), dxf, p);
  ref::write_back(dxf, dx);
}
template <bool Parallel>
void any_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                         const Conv2dParams& p) {
  Tensor dwf = ref::f32_out(dw);
  backward_weight<Parallel>(ref::as_f32(x), ref::as_f32(dy), dwf, db, p);
  ref::write_back(dwf, dw);
}

template <bool Parallel>
ConvKernels make() {
  ConvKernels k{};
  k.conv2d_forward = any_forward<Parallel>;
  k.conv2d_backward_data = any_backward_data<Parallel>;
  k.conv2d_backward_weight = any_backward_weight<Parallel>;
  return k;
}

}  // namespace

ConvKernels ref_conv_kernels() {
  return make<false>();
}
ConvKernels omp_conv_kernels() {
  return make<true>();
}

}  // namespace dplab
