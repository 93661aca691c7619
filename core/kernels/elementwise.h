// Element-wise kernels: fill, strided copy with dtype conversion, axpy, unary and binary math
// (numpy broadcasting), activation forward/backward. Outputs are preallocated by the caller.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct ElementwiseKernels {
  // y[...] = value (any dtype, any strides)
  void (*fill)(Tensor& y, double value);
  // dst[...] = convert(src[...]): same shape, any strides, any dtype pair
  void (*copy)(const Tensor& src, Tensor& dst);
  // y += alpha * x; same shape, f32 (x may be any float dtype; accumulation in f32)
  void (*axpy)(float alpha, const Tensor& x, Tensor& y);
};

ElementwiseKernels ref_elementwise_kernels();
ElementwiseKernels cpu_elementwise_kernels();
ElementwiseKernels cuda_elementwise_kernels();

}  // namespace dplab
