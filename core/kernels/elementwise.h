// Element-wise kernels: fill, strided copy with dtype conversion, axpy, unary and binary math
// (numpy broadcasting), activation forward/backward. Outputs are preallocated by the caller.
// The arithmetic itself is in core/functors.h, shared by every backend.
#pragma once
#include "dplab/core/functors.h"
#include "dplab/core/tensor.h"

namespace dplab {

struct ElementwiseKernels {
  // y[...] = value (any dtype, any strides)
  void (*fill)(Tensor& y, double value);
  // dst[...] = convert(src[...]): same shape, any strides, any dtype pair
  void (*copy)(const Tensor& src, Tensor& dst);
  // y += alpha * x; same shape, f32 (x may be any float dtype; accumulation in f32)
  void (*axpy)(float alpha, const Tensor& x, Tensor& y);
  // y = op(x) (s is the scalar of add_scalar / mul_scalar). x and y any float dtype (computed
  // in f32, y rounded once), same shape, any strides; y may be x itself (in place).
  void (*unary)(UnaryOp op, float s, const Tensor& x, Tensor& y);
  // y = op(a, b) with numpy broadcasting: y has the broadcast shape of a and b, a, b and y any
  // float dtype (computed in f32, y rounded once) and any strides. y may alias a or b when that
  // one has y's shape.
  void (*binary)(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y);
  // y[...] += v for an integer tensor y (i64 or i32, any strides; i32 wraps like the C++
  // conversion of the i64 sum). Counters (BatchNorm's num_batches_tracked) stay on their device
  // this way: reading one back to add 1 on the host would synchronise the host with the device.
  void (*add_int)(Tensor& y, int64_t v);
};

ElementwiseKernels ref_elementwise_kernels();
ElementwiseKernels cpu_elementwise_kernels();
ElementwiseKernels cuda_elementwise_kernels();

// The numpy broadcast of two shapes (aligned at the last dimension); throws naming both shapes
// and `what` when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what);
// Strides that read `t` as if it had shape `out` (broadcast dims get stride 0). `out` must be a
// broadcast of t.shape().
Shape broadcast_strides(const Tensor& t, const Shape& out);

}  // namespace dplab
