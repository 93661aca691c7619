// Fast element-wise kernels: contiguous OpenMP loops; strided or mixed cases go through the
// reference loops (they are rare: views are made contiguous before heavy ops).
#include "dplab/core/kernels/elementwise.h"

namespace dplab {
namespace {

const ElementwiseKernels& spec() {
  static const ElementwiseKernels k = ref_elementwise_kernels();
  return k;
}

void fill(Tensor& y, double value) {
  if (!y.is_contiguous() || y.dtype() != DType::f32) return spec().fill(y, value);
  float* p = y.data<float>();
  const int64_t n = y.numel();
  const float v = static_cast<float>(value);
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) p[i] = v;
}

void copy(const Tensor& src, Tensor& dst) {
  if (!(src.is_contiguous() && dst.is_contiguous() && src.shape() == dst.shape()))
    return spec().copy(src, dst);
  const int64_t n = src.numel();
  if (src.dtype() == dst.dtype()) {
    memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  if (!is_floating(src.dtype()) || !is_floating(dst.dtype())) return spec().copy(src, dst);
  const void* s = src.raw_data();
  void* d = dst.raw_data();
  const DType st = src.dtype(), dt = dst.dtype();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) store_from_f32(d, dt, i, load_as_f32(s, st, i));
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  if (!(x.is_contiguous() && y.is_contiguous() && x.dtype() == DType::f32 &&
        y.dtype() == DType::f32 && x.shape() == y.shape()))
    return spec().axpy(alpha, x, y);
  const float* xs = x.data<float>();
  float* yd = y.data<float>();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) yd[i] += alpha * xs[i];
}

}  // namespace

ElementwiseKernels cpu_elementwise_kernels() {
  ElementwiseKernels k{};
  k.fill = fill;
  k.copy = copy;
  k.axpy = axpy;
  return k;
}

}  // namespace dplab
