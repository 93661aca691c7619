// Reference pooling: PyTorch's definitions as plain loops over (n, c) planes. Every plane is
// independent, so omp_pool_kernels (the cpu backend's fallback) runs the same loops with the
// plane loop split over OpenMP threads.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dplab/core/kernels/pool.h"

namespace dplab {
namespace {

struct Planes {
  int64_t P;       // N * C
  int64_t H, W;    // input extent
  int64_t OH, OW;  // output extent
};

Planes planes(const Tensor& x, const Tensor& y, const char* what) {
  DPLAB_CHECK(x.dim() == 4 && y.dim() == 4 && x.size(0) == y.size(0) && x.size(1) == y.size(1),
              "{} kernel: input {} and output {} do not match", what, shape_str(x.shape()),
              shape_str(y.shape()));
  return {x.size(0) * x.size(1), x.size(2), x.size(3), y.size(2), y.size(3)};
}

// Below this many window taps a parallel region costs more than it saves (and on a busy
// machine a descheduled thread stalls the whole team).
constexpr int64_t kMinParallelWork = 1 << 14;
inline bool parallel(bool enabled, const Planes& g, int64_t taps) {
  return enabled && g.P * std::max(g.H * g.W, g.OH * g.OW * taps) > kMinParallelWork;
}

template <bool Parallel>
void max_forward(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  const Planes g = planes(x, y, "max_pool2d");
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  int64_t* I = nullptr;
  if (workspace) {
    *workspace = Tensor::empty(y.shape(), DType::i64);
    I = workspace->data<int64_t>();
  }
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, p.kernel_h * p.kernel_w))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    const float* xp = X + pl * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t arg = -1;  // stays -1 only if the window holds no input element
        for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
            const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
            if (iw < 0 || iw >= g.W) continue;
            const float v = xp[ih * g.W + iw];
            // First maximum in scan order wins; NaN propagates (PyTorch's rule).
            if (arg < 0 || v > best || std::isnan(v)) {
              best = v;
              arg = ih * g.W + iw;
            }
          }
        }
        Y[(pl * g.OH + oh) * g.OW + ow] = best;
        if (I) I[(pl * g.OH + oh) * g.OW + ow] = arg;
      }
    }
  }
}

template <bool Parallel>
void max_backward(const Tensor& dy, const Tensor& workspace, Tensor& dx, const Pool2dParams& p) {
  const Planes g = planes(dx, dy, "max_pool2d_backward");
  DPLAB_CHECK(workspace.dtype() == DType::i64 && workspace.shape() == dy.shape(),
              "max_pool2d_backward: workspace {} is not this backend's argmax indices for dy {}",
              workspace.str(), dy.str());
  const float* DY = dy.data<float>();
  const int64_t* I = workspace.data<int64_t>();
  float* DX = dx.data<float>();
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, 1))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    float* dxp = DX + pl * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) dxp[i] = 0.0f;
    for (int64_t o = pl * g.OH * g.OW; o < (pl + 1) * g.OH * g.OW; ++o)
      if (I[o] >= 0) dxp[I[o]] += DY[o];
  }
}

// One average-pooling window along one dim: [start, end) clipped to the input, and the extent
// of the window clipped to the padded input (PyTorch's count_include_pad divisor factor).
struct Window {
  int64_t start, end, padded_extent;
};
inline Window avg_window(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t in) {
  int64_t start = o * stride - pad;
  int64_t end = std::min(start + k, in + pad);
  const int64_t padded = end - start;
  start = std::max<int64_t>(start, 0);
  end = std::min(end, in);
  return {start, end, padded};
}

inline int64_t avg_divisor(const Window& h, const Window& w, bool count_include_pad) {
  return count_include_pad ? h.padded_extent * w.padded_extent
                           : (h.end - h.start) * (w.end - w.start);
}

template <bool Parallel>
void avg_forward(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const Planes g = planes(x, y, "avg_pool2d");
  const float* X = x.data<float>();
  float* Y = y.data<float>();
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, p.kernel_h * p.kernel_w))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    const float* xp = X + pl * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Window wh = avg_window(oh, p.kernel_h, p.stride_h, p.pad_h, g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Window ww = avg_window(ow, p.kernel_w, p.stride_w, p.pad_w, g.W);
        const int64_t div = avg_divisor(wh, ww, p.count_include_pad);
        double sum = 0.0;
        for (int64_t ih = wh.start; ih < wh.end; ++ih)
          for (int64_t iw = ww.start; iw < ww.end; ++iw) sum += xp[ih * g.W + iw];
        Y[(pl * g.OH + oh) * g.OW + ow] = div > 0 ? static_cast<float>(sum / div) : 0.0f;
      }
    }
  }
}

template <bool Parallel>
void avg_backward(const Tensor& dy, Tensor& dx, const Pool2dParams& p) {
  const Planes g = planes(dx, dy, "avg_pool2d_backward");
  const float* DY = dy.data<float>();
  float* DX = dx.data<float>();
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, p.kernel_h * p.kernel_w))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    float* dxp = DX + pl * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) dxp[i] = 0.0f;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Window wh = avg_window(oh, p.kernel_h, p.stride_h, p.pad_h, g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Window ww = avg_window(ow, p.kernel_w, p.stride_w, p.pad_w, g.W);
        const int64_t div = avg_divisor(wh, ww, p.count_include_pad);
        if (div <= 0) continue;
        const float share = DY[(pl * g.OH + oh) * g.OW + ow] / static_cast<float>(div);
        for (int64_t ih = wh.start; ih < wh.end; ++ih)
          for (int64_t iw = ww.start; iw < ww.end; ++iw) dxp[ih * g.W + iw] += share;
      }
    }
  }
}

inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;  // ceil
}

template <bool Parallel>
void adaptive_forward(const Tensor& x, Tensor& y) {
  const Planes g = planes(x, y, "adaptive_avg_pool2d");
  const float* X = x.data<float>();
  float* Y = y.data<float>();
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, 1))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    const float* xp = X + pl * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = adaptive_start(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = adaptive_start(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.W + iw];
        Y[(pl * g.OH + oh) * g.OW + ow] = static_cast<float>(sum / ((h1 - h0) * (w1 - w0)));
      }
    }
  }
}

template <bool Parallel>
void adaptive_backward(const Tensor& dy, Tensor& dx) {
  const Planes g = planes(dx, dy, "adaptive_avg_pool2d_backward");
  const float* DY = dy.data<float>();
  float* DX = dx.data<float>();
#pragma omp parallel for schedule(static) if (parallel(Parallel, g, 1))
  for (int64_t pl = 0; pl < g.P; ++pl) {
    float* dxp = DX + pl * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) dxp[i] = 0.0f;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = adaptive_start(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = adaptive_start(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        const float share =
            DY[(pl * g.OH + oh) * g.OW + ow] / static_cast<float>((h1 - h0) * (w1 - w0));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) dxp[ih * g.W + iw] += share;
      }
    }
  }
}

template <bool Parallel>
PoolKernels make() {
  PoolKernels k{};
  k.max_pool2d_forward = max_forward<Parallel>;
  k.max_pool2d_backward = max_backward<Parallel>;
  k.avg_pool2d_forward = avg_forward<Parallel>;
  k.avg_pool2d_backward = avg_backward<Parallel>;
  k.adaptive_avg_pool2d_forward = adaptive_forward<Parallel>;
  k.adaptive_avg_pool2d_backward = adaptive_backward<Parallel>;
  return k;
}

}  // namespace

PoolKernels ref_pool_kernels() {
  return make<false>();
}
PoolKernels omp_pool_kernels() {
  return make<true>();
}

}  // namespace dplab
