// CUDA random family: ref's checks (core/cpu/ref/random.cpp) here, kernels in random_kernels.cu,
// all on the device's compute stream; nothing here waits for the device.
#include "dplab/core/kernels/random.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/kernel_scope.h"
#include "dplab/core/cuda/launch_random.h"

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
  check_same_device(x, y, "dropout");
  check_same_device(x, mask, "dropout mask");
}

void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t stream, Tensor& y,
                     Tensor& mask) {
  check_dropout(x, y, mask, p);
  cuda::KernelScope scope(x, "dropout");
  const float scale = 1.f / (1.f - p);  // on the host, as ref computes it
  DPLAB_CUDA_CHECK(cuda::launch_dropout_forward(x.data<float>(), p, scale, seed, stream,
                                                y.data<float>(), mask.data<uint8_t>(), x.numel(),
                                                scope.stream()));
}

void dropout_backward(const Tensor& dy, const Tensor& mask, float p, Tensor& dx) {
  check_dropout(dy, dx, mask, p);
  cuda::KernelScope scope(dy, "dropout backward");
  const float scale = 1.f / (1.f - p);
  DPLAB_CUDA_CHECK(cuda::launch_dropout_backward(dy.data<float>(), mask.data<uint8_t>(), scale,
                                                 dx.data<float>(), dy.numel(), scope.stream()));
}

void uniform(uint64_t seed, uint64_t stream, float lo, float hi, Tensor& y) {
  check_dtype(y, DType::f32, "uniform output");
  DPLAB_CHECK(y.is_contiguous(), "uniform: output {} must be contiguous", y.str());
  cuda::KernelScope scope(y, "uniform");
  DPLAB_CUDA_CHECK(
      cuda::launch_uniform(seed, stream, lo, hi, y.data<float>(), y.numel(), scope.stream()));
}

}  // namespace

RandomKernels cuda_random_kernels() {
  RandomKernels k{};
  k.dropout_forward = dropout_forward;
  k.dropout_backward = dropout_backward;
  k.uniform = uniform;
  return k;
}

}  // namespace dplab
