// Reference random kernels: element i uses draw i of (seed, stream), one element at a time.
#include "dplab/core/kernels/random.h"

namespace dplab {
namespace {

void check_dropout(const Tensor& x, const Tensor& y, const Tensor& mask, float p) {
  DPLAB_CHECK(p >= 0.f && p < 1.f, "dropout: p = {} must be in [0, 1)", p);
  check_dtype(x, DType::f32, "dropout input");
  check_dtype(y, DType::f32, "dropout output");
  check_dtype(mask, DType::u8, "dropout mask");
  check_shape(y, x.shape(), "dropout output");
  check_shape(mask, x.shape(), "dropout mask");
  DPLAB_CHECK(x.is_contiguous() && y.is_contiguous() && mask.is_contiguous(),
              "dropout: tensors must be contiguous");
}

void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t stream, Tensor& y,
                     Tensor& mask) {
  check_dropout(x, y, mask, p);
  const float scale = 1.f / (1.f - p);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  uint8_t* mp = mask.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = philox_draw_uniform(seed, stream, i) >= p;
    mp[i] = keep ? 1 : 0;
    yp[i] = keep ? xp[i] * scale : 0.f;
  }
}

void dropout_backward(const Tensor& dy, const Tensor& mask, float p, Tensor& dx) {
  check_dropout(dy, dx, mask, p);
  const float scale = 1.f / (1.f - p);
  const float* g = dy.data<float>();
  const uint8_t* mp = mask.data<uint8_t>();
  float* d = dx.data<float>();
  for (int64_t i = 0; i < dy.numel(); ++i) d[i] = mp[i] ? g[i] * scale : 0.f;
}

void uniform(uint64_t seed, uint64_t stream, float lo, float hi, Tensor& y) {
  check_dtype(y, DType::f32, "uniform output");
  DPLAB_CHECK(y.is_contiguous(), "uniform: output {} must be contiguous", y.str());
  float* yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i)
    yp[i] = lo + (hi - lo) * philox_draw_uniform(seed, stream, i);
}

}  // namespace

RandomKernels ref_random_kernels() {
  RandomKernels k{};
  k.dropout_forward = dropout_forward;
  k.dropout_backward = dropout_backward;
  k.uniform = uniform;
  return k;
}

}  // namespace dplab
