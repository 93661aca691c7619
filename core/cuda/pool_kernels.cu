// CUDA pooling kernels: one thread per output element (forward) or per input element
// (backward). The backward kernels gather instead of scattering: each input element sums the
// gradients of the windows that hold it, visiting them in increasing output index, which is
// the order in which core/cpu/ref/pool.cpp scatters. So no atomics, a deterministic result, and
// the same float additions in the same order as the reference.
#include "dplab/core/cuda/launch_pool.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : b);
}

#define DPLAB_GRID_STRIDE(i, n)                                             \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__device__ __forceinline__ int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}
// Floor division for a possibly negative numerator and a positive divisor.
__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

__global__ void max_forward_kernel(const float* x, float* y, int32_t* argmax, PoolGeom g) {
  const int64_t n = g.P * g.OH * g.OW;
  DPLAB_GRID_STRIDE(o, n) {
    const int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, pl = o / (g.OW * g.OH);
    const float* xp = x + pl * g.H * g.W;
    float best = -INFINITY;
    int64_t arg = -1;  // stays -1 only if the window holds no input element
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
        if (iw < 0 || iw >= g.W) continue;
        const float v = xp[ih * g.W + iw];
        // The reference's rule: first maximum in scan order wins; a NaN always takes over.
        if (arg < 0 || v > best || isnan(v)) {
          best = v;
          arg = ih * g.W + iw;
        }
      }
    }
    y[o] = best;
    if (argmax) argmax[o] = static_cast<int32_t>(arg);
  }
}

__global__ void max_backward_kernel(const float* dy, const int32_t* argmax, float* dx, PoolGeom g) {
  const int64_t n = g.P * g.H * g.W;
  DPLAB_GRID_STRIDE(i, n) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, pl = i / (g.W * g.H);
    const int64_t self = ih * g.W + iw;
    const int64_t base = pl * g.OH * g.OW;
    float acc = 0.0f;
    // Windows holding (ih, iw): oh*sh - ph + kh*dh == ih. Descending kh gives ascending oh.
    for (int64_t kh = g.kh - 1; kh >= 0; --kh) {
      const int64_t th = ih + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh != 0) continue;
      const int64_t oh = th / g.sh;
      if (oh >= g.OH) continue;
      for (int64_t kw = g.kw - 1; kw >= 0; --kw) {
        const int64_t tw = iw + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0) continue;
        const int64_t ow = tw / g.sw;
        if (ow >= g.OW) continue;
        const int64_t o = base + oh * g.OW + ow;
        if (argmax[o] == self) acc += dy[o];
      }
    }
    dx[i] = acc;
  }
}

// The reference's average window along one dim: [start, end) clipped to the input, and the
// window's extent clipped to the padded input (the count_include_pad divisor factor).
struct Window {
  int64_t start, end, padded;
};
__device__ __forceinline__ Window avg_window(int64_t o, int64_t k, int64_t stride, int64_t pad,
                                             int64_t in) {
  int64_t start = o * stride - pad;
  int64_t end = min64(start + k, in + pad);
  const int64_t padded = end - start;
  start = max64(start, 0);
  end = min64(end, in);
  return {start, end, padded};
}
__device__ __forceinline__ int64_t avg_divisor(const Window& h, const Window& w, bool incl) {
  return incl ? h.padded * w.padded : (h.end - h.start) * (w.end - w.start);
}

__global__ void avg_forward_kernel(const float* x, float* y, PoolGeom g) {
  const int64_t n = g.P * g.OH * g.OW;
  DPLAB_GRID_STRIDE(o, n) {
    const int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, pl = o / (g.OW * g.OH);
    const float* xp = x + pl * g.H * g.W;
    const Window wh = avg_window(oh, g.kh, g.sh, g.ph, g.H);
    const Window ww = avg_window(ow, g.kw, g.sw, g.pw, g.W);
    const int64_t div = avg_divisor(wh, ww, g.count_include_pad);
    double sum = 0.0;  // as the reference: double sum, one division
    for (int64_t ih = wh.start; ih < wh.end; ++ih)
      for (int64_t iw = ww.start; iw < ww.end; ++iw) sum += xp[ih * g.W + iw];
    y[o] = div > 0 ? static_cast<float>(sum / static_cast<double>(div)) : 0.0f;
  }
}

__global__ void avg_backward_kernel(const float* dy, float* dx, PoolGeom g) {
  const int64_t n = g.P * g.H * g.W;
  DPLAB_GRID_STRIDE(i, n) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, pl = i / (g.W * g.H);
    const float* dyp = dy + pl * g.OH * g.OW;
    // Candidate windows: start = o*s - pad <= i and start + k > i; membership is then checked
    // against the reference's clipped window itself.
    const int64_t oh0 = max64(0, floor_div(ih + g.ph - g.kh, g.sh) + 1);
    const int64_t oh1 = min64(g.OH - 1, floor_div(ih + g.ph, g.sh));
    const int64_t ow0 = max64(0, floor_div(iw + g.pw - g.kw, g.sw) + 1);
    const int64_t ow1 = min64(g.OW - 1, floor_div(iw + g.pw, g.sw));
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const Window wh = avg_window(oh, g.kh, g.sh, g.ph, g.H);
      if (ih < wh.start || ih >= wh.end) continue;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const Window ww = avg_window(ow, g.kw, g.sw, g.pw, g.W);
        if (iw < ww.start || iw >= ww.end) continue;
        const int64_t div = avg_divisor(wh, ww, g.count_include_pad);
        if (div <= 0) continue;
        acc += dyp[oh * g.OW + ow] / static_cast<float>(div);
      }
    }
    dx[i] = acc;
  }
}

// Adaptive windows: output o covers [floor(o*in/out), ceil((o+1)*in/out)).
__device__ __forceinline__ int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
__device__ __forceinline__ int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

__global__ void adaptive_forward_kernel(const float* x, float* y, PoolGeom g) {
  const int64_t n = g.P * g.OH * g.OW;
  DPLAB_GRID_STRIDE(o, n) {
    const int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, pl = o / (g.OW * g.OH);
    const float* xp = x + pl * g.H * g.W;
    const int64_t h0 = adaptive_start(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
    const int64_t w0 = adaptive_start(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
    double sum = 0.0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.W + iw];
    y[o] = static_cast<float>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
  }
}

__global__ void adaptive_backward_kernel(const float* dy, float* dx, PoolGeom g) {
  const int64_t n = g.P * g.H * g.W;
  DPLAB_GRID_STRIDE(i, n) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, pl = i / (g.W * g.H);
    const float* dyp = dy + pl * g.OH * g.OW;
    // start(o) <= i  <=>  o <= ((i+1)*out - 1) / in;  end(o) > i  <=>  o >= i*out / in.
    const int64_t oh0 = (ih * g.OH) / g.H, oh1 = min64(g.OH - 1, ((ih + 1) * g.OH - 1) / g.H);
    const int64_t ow0 = (iw * g.OW) / g.W, ow1 = min64(g.OW - 1, ((iw + 1) * g.OW - 1) / g.W);
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t h0 = adaptive_start(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      if (ih < h0 || ih >= h1) continue;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t w0 = adaptive_start(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        if (iw < w0 || iw >= w1) continue;
        acc += dyp[oh * g.OW + ow] / static_cast<float>((h1 - h0) * (w1 - w0));
      }
    }
    dx[i] = acc;
  }
}

}  // namespace

cudaError_t launch_max_pool_forward(const float* x, float* y, int32_t* argmax, const PoolGeom& g,
                                    cudaStream_t s) {
  const int64_t n = g.P * g.OH * g.OW;
  if (n == 0) return cudaSuccess;
  max_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, argmax, g);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx,
                                     const PoolGeom& g, cudaStream_t s) {
  const int64_t n = g.P * g.H * g.W;
  if (n == 0) return cudaSuccess;
  max_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(dy, argmax, dx, g);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_forward(const float* x, float* y, const PoolGeom& g, cudaStream_t s) {
  const int64_t n = g.P * g.OH * g.OW;
  if (n == 0) return cudaSuccess;
  avg_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, g);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_backward(const float* dy, float* dx, const PoolGeom& g,
                                     cudaStream_t s) {
  const int64_t n = g.P * g.H * g.W;
  if (n == 0) return cudaSuccess;
  avg_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, g);
  return cudaGetLastError();
}

cudaError_t launch_adaptive_avg_forward(const float* x, float* y, const PoolGeom& g,
                                        cudaStream_t s) {
  const int64_t n = g.P * g.OH * g.OW;
  if (n == 0) return cudaSuccess;
  adaptive_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, g);
  return cudaGetLastError();
}

cudaError_t launch_adaptive_avg_backward(const float* dy, float* dx, const PoolGeom& g,
                                         cudaStream_t s) {
  const int64_t n = g.P * g.H * g.W;
  if (n == 0) return cudaSuccess;
  adaptive_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, g);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
