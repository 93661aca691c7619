// Fast random kernels: one Philox block gives four consecutive elements, so the loop runs over
// blocks (in parallel: each block is a pure function of its counter, so the result is the same
// for any thread count) and handles a ragged tail.
#include <algorithm>

#include "dplab/core/kernels/random.h"

namespace dplab {
namespace {

const RandomKernels& spec() {
  static const RandomKernels k = ref_random_kernels();
  return k;
}

constexpr int64_t kParallelMin = 16384;

void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t stream, Tensor& y,
                     Tensor& mask) {
  if (!(x.is_contiguous() && y.is_contiguous() && mask.is_contiguous() && x.dtype() == DType::f32 &&
        y.dtype() == DType::f32 && mask.dtype() == DType::u8 && y.shape() == x.shape() &&
        mask.shape() == x.shape() && p >= 0.f && p < 1.f))
    return spec().dropout_forward(x, p, seed, stream, y, mask);
  const float scale = 1.f / (1.f - p);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  uint8_t* mp = mask.data<uint8_t>();
  const int64_t n = x.numel(), blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) {
    const Philox4 r = philox4x32(seed, stream, static_cast<uint64_t>(b));
    const int64_t i0 = b * 4, len = std::min<int64_t>(4, n - i0);
    for (int64_t j = 0; j < len; ++j) {
      const bool keep = philox_uniform(r.v[j]) >= p;
      mp[i0 + j] = keep ? 1 : 0;
      yp[i0 + j] = keep ? xp[i0 + j] * scale : 0.f;
    }
  }
}

void dropout_backward(const Tensor& dy, const Tensor& mask, float p, Tensor& dx) {
  if (!(dy.is_contiguous() && dx.is_contiguous() && mask.is_contiguous() &&
        dy.dtype() == DType::f32 && dx.dtype() == DType::f32 && mask.dtype() == DType::u8 &&
        dx.shape() == dy.shape() && mask.shape() == dy.shape() && p >= 0.f && p < 1.f))
    return spec().dropout_backward(dy, mask, p, dx);
  const float scale = 1.f / (1.f - p);
  const float* g = dy.data<float>();
  const uint8_t* mp = mask.data<uint8_t>();
  float* d = dx.data<float>();
  const int64_t n = dy.numel();
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) d[i] = g[i] * (mp[i] ? scale : 0.f);
}

void uniform(uint64_t seed, uint64_t stream, float lo, float hi, Tensor& y) {
  if (!(y.is_contiguous() && y.dtype() == DType::f32))
    return spec().uniform(seed, stream, lo, hi, y);
  float* yp = y.data<float>();
  const int64_t n = y.numel(), blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) {
    const Philox4 r = philox4x32(seed, stream, static_cast<uint64_t>(b));
    const int64_t i0 = b * 4, len = std::min<int64_t>(4, n - i0);
    for (int64_t j = 0; j < len; ++j) yp[i0 + j] = lo + (hi - lo) * philox_uniform(r.v[j]);
  }
}

}  // namespace

RandomKernels cpu_random_kernels() {
  RandomKernels k{};
  k.dropout_forward = dropout_forward;
  k.dropout_backward = dropout_backward;
  k.uniform = uniform;
  return k;
}

}  // namespace dplab
