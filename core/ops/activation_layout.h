// How the differentiable ops pass activations to kernels when blocked layouts are about
// (Layout, core/tensor.h): the shared rules of the conv, pooling and batch-norm ops.
#pragma once
#include "dplab/core/backend.h"

namespace dplab {

// What a kernel of `be` is given for activation t: t itself when it is blocked and `be` computes
// on blocked activations (Backend::blocked_activations), else its NCHW-contiguous form.
inline Tensor activation_operand(const Backend& be, const Tensor& t) {
  return t.is_blocked() && be.blocked_activations ? t : t.contiguous();
}

// An f32 t in layout l (strided meaning NCHW-contiguous): a gradient brought to the layout the
// op's input had, so the op's backward kernel reads dy and x alike and writes dx in it.
inline Tensor f32_in_layout(const Tensor& t, Layout l) {
  const Tensor f = t.to(DType::f32);
  return l == Layout::strided ? f.contiguous() : f.to(l);
}

// An uninitialised f32 tensor of `shape` in layout l on device d.
inline Tensor empty_in_layout(const Shape& shape, Layout l, Device d) {
  return l == Layout::strided ? Tensor::empty(shape, DType::f32, d) : Tensor::empty(shape, l);
}

}  // namespace dplab
