// How the reference kernels take bf16 activations (autocast) and blocked layouts: they run their
// f32 NCHW loops on the f32 values of the inputs and round each output once into its own dtype
// and layout. That is the arithmetic the fast kernels promise (f32 math on bf16 storage), so the
// same op-case table checks both.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab::ref {

// t itself when it is already what the f32 loops read (undefined, or f32 and strided).
inline bool plain_f32(const Tensor& t) {
  return !t.defined() || (t.dtype() == DType::f32 && !t.is_blocked());
}

// An input as f32 NCHW-contiguous.
inline Tensor as_f32(const Tensor& t) {
  return plain_f32(t) ? t : t.contiguous_if_blocked().to(DType::f32).contiguous();
}

// An f32 NCHW stand-in for output t (t itself when it is one); write_back copies it into t.
inline Tensor f32_out(const Tensor& t) {
  return plain_f32(t) ? t : Tensor::empty(t.shape());
}
inline void write_back(const Tensor& f, Tensor& t) {
  if (t.defined() && f.impl_ptr() != t.impl_ptr()) t.copy_(f);
}

}  // namespace dplab::ref
