// CUDA element-wise kernel family: validation and error context here, kernels in
// elementwise_kernels.cu. Launches go to the default stream (streams arrive with the CUDA
// backend issue).
#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/launch.h"

namespace dplab {
namespace {

void check_contiguous(const Tensor& t, const char* what) {
  DPLAB_CHECK(t.is_contiguous(), "CUDA {}: tensor {} must be contiguous", what, t.str());
}

void fill(Tensor& y, double value) {
  check_contiguous(y, "fill");
  DPLAB_CHECK(y.dtype() != DType::i64, "CUDA fill: i64 unsupported ({})", y.str());
  DPLAB_CUDA_CHECK(
      cuda::launch_fill(y.raw_data(), y.dtype(), y.numel(), static_cast<float>(value), nullptr));
}

void copy(const Tensor& src, Tensor& dst) {
  check_contiguous(src, "copy");
  check_contiguous(dst, "copy");
  DPLAB_CHECK(src.shape() == dst.shape(), "CUDA copy: {} into {}", src.str(), dst.str());
  if (src.dtype() == dst.dtype()) {
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(),
                                     cudaMemcpyDeviceToDevice, nullptr));
    return;
  }
  DPLAB_CUDA_CHECK(cuda::launch_convert(src.raw_data(), src.dtype(), dst.raw_data(), dst.dtype(),
                                        src.numel(), nullptr));
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  check_contiguous(x, "axpy");
  check_contiguous(y, "axpy");
  check_dtype(y, DType::f32, "CUDA axpy output");
  DPLAB_CHECK(x.shape() == y.shape(), "CUDA axpy: {} and {}", x.str(), y.str());
  DPLAB_CUDA_CHECK(
      cuda::launch_axpy(alpha, x.raw_data(), x.dtype(), y.data<float>(), x.numel(), nullptr));
}

}  // namespace

ElementwiseKernels cuda_elementwise_kernels() {
  ElementwiseKernels k{};
  k.fill = fill;
  k.copy = copy;
  k.axpy = axpy;
  return k;
}

}  // namespace dplab
