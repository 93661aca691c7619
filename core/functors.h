// Element-wise arithmetic written once, as small functors with DPLAB_HD call operators.
//
// Why: every op exists three times (core/cpu/ref = the specification, core/cpu = fast OpenMP
// loops, core/cuda = kernels). If each copy wrote its own `1 / (1 + exp(-x))` or its own
// label-smoothed target, the three could drift apart in subtle ways (a different tie rule in
// relu's backward, a different smoothing formula) and the CPU tests would prove nothing about
// the GPU. So the arithmetic lives here, the kernels only decide *how* to walk the elements,
// and the CUDA kernels call these very structs (hostdevice.h makes them __host__ __device__).
//
// The enums name the functors so kernels can be selected at run time through one function
// pointer per family (core/kernels/elementwise.h); dispatch_unary / dispatch_binary turn an
// enum into a compile-time functor so the inner loops stay inlined and vectorisable.
#pragma once
#include <cmath>
#include <cstdint>

#include "dplab/core/dtype.h"
#include "dplab/core/hostdevice.h"

namespace dplab {

enum class UnaryOp : uint8_t {
  neg,
  exp,
  log,
  sqrt,
  abs,
  square,
  relu,
  sigmoid,
  tanh,
  add_scalar,  // x + s
  mul_scalar,  // x * s
};

// Binary ops: y = f(a, b). The *_backward ops take (upstream gradient, saved tensor) and give
// the gradient of the input of the matching unary op.
enum class BinaryOp : uint8_t {
  add,
  sub,
  mul,
  div,
  relu_backward,     // (g, y or x) -> g where x > 0
  sigmoid_backward,  // (g, y) -> g * y * (1 - y)
  tanh_backward,     // (g, y) -> g * (1 - y^2)
  sqrt_backward,     // (g, y) -> g / (2 y)
  abs_backward,      // (g, x) -> g * sign(x)
  square_backward,   // (g, x) -> 2 x g
  add_relu,          // (a, b) -> relu(a + b): a residual block's sum and activation in one pass
};

namespace fn {

// ---- binary arithmetic -----------------------------------------------------------------------
struct Add {
  DPLAB_HD float operator()(float a, float b) const { return a + b; }
};
// relu(a + b), rounding as Add then Relu do one after the other.
struct AddRelu {
  DPLAB_HD float operator()(float a, float b) const {
    const float s = a + b;
    return s > 0.f ? s : (s != s ? s : 0.f);
  }
};
struct Sub {
  DPLAB_HD float operator()(float a, float b) const { return a - b; }
};
struct Mul {
  DPLAB_HD float operator()(float a, float b) const { return a * b; }
};
struct Div {
  DPLAB_HD float operator()(float a, float b) const { return a / b; }
};

// ---- unary arithmetic (the scalar s is unused except by the *_scalar ops) ---------------------
struct Neg {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return -x; }
};
struct Exp {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return ::expf(x); }
};
struct Log {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return ::logf(x); }
};
struct Sqrt {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return ::sqrtf(x); }
};
struct Abs {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return ::fabsf(x); }
};
struct Square {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return x * x; }
};
// relu(x) = max(x, 0); a NaN input stays NaN (as in PyTorch) so divergence is not hidden.
struct Relu {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return x > 0.f ? x : (x != x ? x : 0.f); }
};
// Numerically stable in both tails: exp of a non-positive number only.
struct Sigmoid {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const {
    if (x >= 0.f) return 1.f / (1.f + ::expf(-x));
    const float e = ::expf(x);
    return e / (1.f + e);
  }
};
struct Tanh {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return ::tanhf(x); }
};
struct AddScalar {
  float s = 0.f;
  DPLAB_HD float operator()(float x) const { return x + s; }
};
struct MulScalar {
  float s = 1.f;
  DPLAB_HD float operator()(float x) const { return x * s; }
};

// ---- backward of the activations: (upstream gradient g, saved value) -------------------------
// The gradient at x == 0 is 0 (PyTorch's convention for relu).
struct ReluBackward {
  DPLAB_HD float operator()(float g, float saved) const { return saved > 0.f ? g : 0.f; }
};
struct SigmoidBackward {
  DPLAB_HD float operator()(float g, float y) const { return g * y * (1.f - y); }
};
struct TanhBackward {
  DPLAB_HD float operator()(float g, float y) const { return g * (1.f - y * y); }
};
struct SqrtBackward {
  DPLAB_HD float operator()(float g, float y) const { return g / (2.f * y); }
};
struct AbsBackward {
  DPLAB_HD float operator()(float g, float x) const { return x > 0.f ? g : (x < 0.f ? -g : 0.f); }
};
struct SquareBackward {
  DPLAB_HD float operator()(float g, float x) const { return 2.f * x * g; }
};

// ---- softmax and cross-entropy, per row ------------------------------------------------------
// log p_c = x_c - lse with lse = m + log(sum_c exp(x_c - m)), m = max_c x_c: subtracting the
// maximum keeps every exp() in (0, 1], so no row overflows.
DPLAB_HD float log_sum_exp(float row_max, float sum_exp_shifted) {
  return row_max + ::logf(sum_exp_shifted);
}
// Label-smoothed target probability of class c for a sample of class y: (1-s)·[c==y] + s/C.
DPLAB_HD float smoothed_target(int64_t c, int64_t y, int64_t num_classes, float smoothing) {
  return (c == y ? 1.f - smoothing : 0.f) + smoothing / static_cast<float>(num_classes);
}
// One row's loss: (1-s)·(−log p_y) + s·mean_c(−log p_c). With z_c = x_c − max (the shifted
// logits) and L = log Σ exp(z_c): −log p_c = L − z_c, so mean_c(−log p_c) = L − Σz/C. Working
// on shifted logits keeps the cancellation small when the logits are large. Exactly PyTorch's
// CrossEntropyLoss(label_smoothing=s).
DPLAB_HD float cross_entropy_row(float log_sum_shifted, float shifted_target, float sum_shifted,
                                 int64_t num_classes, float smoothing) {
  const float nll = log_sum_shifted - shifted_target;
  const float smooth = log_sum_shifted - sum_shifted / static_cast<float>(num_classes);
  return (1.f - smoothing) * nll + smoothing * smooth;
}
// d(row loss)/d x_c = softmax_c − target_c, scaled by the upstream gradient of the mean.
DPLAB_HD float cross_entropy_grad(float logit, float lse, int64_t c, int64_t y, int64_t num_classes,
                                  float smoothing, float scale) {
  return scale * (::expf(logit - lse) - smoothed_target(c, y, num_classes, smoothing));
}

// ---- casts (bit-exact round-to-nearest-even converters of core/dtype.h) ----------------------
template <typename T>
struct ToF32;
template <>
struct ToF32<float> {
  DPLAB_HD float operator()(float v) const { return v; }
};
template <>
struct ToF32<bf16_t> {
  DPLAB_HD float operator()(bf16_t v) const { return bf16_to_f32(v.bits); }
};
template <>
struct ToF32<f16_t> {
  DPLAB_HD float operator()(f16_t v) const { return f16_to_f32(v.bits); }
};
template <typename T>
struct FromF32;
template <>
struct FromF32<float> {
  DPLAB_HD float operator()(float v) const { return v; }
};
template <>
struct FromF32<bf16_t> {
  DPLAB_HD bf16_t operator()(float v) const { return bf16_t{f32_to_bf16(v)}; }
};
template <>
struct FromF32<f16_t> {
  DPLAB_HD f16_t operator()(float v) const { return f16_t{f32_to_f16(v)}; }
};
// Src -> Dst through f32 (exact for the widening direction; one rounding for narrowing).
template <typename Src, typename Dst>
struct Cast {
  DPLAB_HD Dst operator()(Src v) const { return FromF32<Dst>{}(ToF32<Src>{}(v)); }
};

}  // namespace fn

// Calls f(functor) with the functor named by `op` (host-side dispatch; kernels templated on the
// functor type get inlined, vectorisable inner loops).
template <typename F>
decltype(auto) dispatch_unary(UnaryOp op, float s, F&& f) {
  switch (op) {
    case UnaryOp::neg:
      return f(fn::Neg{s});
    case UnaryOp::exp:
      return f(fn::Exp{s});
    case UnaryOp::log:
      return f(fn::Log{s});
    case UnaryOp::sqrt:
      return f(fn::Sqrt{s});
    case UnaryOp::abs:
      return f(fn::Abs{s});
    case UnaryOp::square:
      return f(fn::Square{s});
    case UnaryOp::relu:
      return f(fn::Relu{s});
    case UnaryOp::sigmoid:
      return f(fn::Sigmoid{s});
    case UnaryOp::tanh:
      return f(fn::Tanh{s});
    case UnaryOp::add_scalar:
      return f(fn::AddScalar{s});
    case UnaryOp::mul_scalar:
      return f(fn::MulScalar{s});
  }
  return f(fn::Neg{s});
}

// a + b with two's-complement wrap-around (the add_int kernel's arithmetic): the sum is formed in
// uint64_t, where overflow is defined, and converted back (modular since C++20).
DPLAB_HD int64_t add_int_wrapping(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

template <typename F>
decltype(auto) dispatch_binary(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add:
      return f(fn::Add{});
    case BinaryOp::sub:
      return f(fn::Sub{});
    case BinaryOp::mul:
      return f(fn::Mul{});
    case BinaryOp::div:
      return f(fn::Div{});
    case BinaryOp::relu_backward:
      return f(fn::ReluBackward{});
    case BinaryOp::sigmoid_backward:
      return f(fn::SigmoidBackward{});
    case BinaryOp::tanh_backward:
      return f(fn::TanhBackward{});
    case BinaryOp::sqrt_backward:
      return f(fn::SqrtBackward{});
    case BinaryOp::abs_backward:
      return f(fn::AbsBackward{});
    case BinaryOp::square_backward:
      return f(fn::SquareBackward{});
    case BinaryOp::add_relu:
      return f(fn::AddRelu{});
  }
  return f(fn::Add{});
}

}  // namespace dplab
