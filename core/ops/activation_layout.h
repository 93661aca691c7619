// How the differentiable ops pass activations to kernels when blocked layouts are about
// (Layout, core/tensor.h): the shared rules of the conv, pooling and batch-norm ops.
#pragma once
#include "dplab/core/backend.h"

namespace dplab {

// True when t is in the non-strided layout `be` computes on (Backend::activation_layout).
inline bool in_native_layout(const Backend& be, const Tensor& t) {
  return t.is_blocked() && t.layout() == be.activation_layout;
}

// What a kernel of `be` is given for activation t: t itself when it is in the backend's
// non-strided layout, else its NCHW-contiguous form.
inline Tensor activation_operand(const Backend& be, const Tensor& t) {
  return in_native_layout(be, t) ? t : t.contiguous();
}

// t as dtype `dt` in layout l (strided meaning NCHW-contiguous): a gradient brought to the
// dtype and layout the op's input had, so the op's backward kernel reads dy and x alike and
// writes dx so.
inline Tensor in_dtype_layout(const Tensor& t, DType dt, Layout l) {
  if (t.dtype() == dt && t.layout() == l) return l == Layout::strided ? t.contiguous() : t;
  if (t.layout() == l && l != Layout::strided) {  // one layout, two dtypes: a cast in place
    Tensor y = Tensor::empty(t.shape(), l, dt, t.device());
    y.copy_(t);
    return y;
  }
  const Tensor f = t.contiguous_if_blocked().to(dt);
  return l == Layout::strided ? f.contiguous() : f.to(l);
}
inline Tensor f32_in_layout(const Tensor& t, Layout l) {
  return in_dtype_layout(t, DType::f32, l);
}

// An uninitialised tensor of `shape` and dtype `dt` in layout l on device d.
inline Tensor empty_in_layout(const Shape& shape, Layout l, Device d, DType dt = DType::f32) {
  return Tensor::empty(shape, l, dt, d);
}

}  // namespace dplab
