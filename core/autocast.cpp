#include "dplab/core/autocast.h"

#include "dplab/core/ops/elementwise.h"

namespace dplab {
namespace {

// Thread-local by design: a scoped mode of the forward-pass thread, like grad mode
// (core/autograd.cpp); see core/autocast.h.
thread_local DType t_autocast = DType::f32;

}  // namespace

AutocastGuard::AutocastGuard(DType dtype) : prev_(t_autocast) {
  DPLAB_CHECK(dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32,
              "AutocastGuard: dtype must be bf16, f16 or f32 (off), got {}", dtype_name(dtype));
  t_autocast = dtype;
}

AutocastGuard::~AutocastGuard() {
  t_autocast = prev_;
}

DType autocast_dtype() {
  return t_autocast;
}

Tensor autocast_operand(const Tensor& t) {
  const DType d = t_autocast;
  if (d == DType::f32 || !t.defined() || t.dtype() != DType::f32) return t;
  return cast(cast(t, d), DType::f32);
}

}  // namespace dplab
