// Element-wise differentiable ops. Forward: validate, allocate the output (the inputs' dtype when
// they share one, as a bf16 activation under autocast stays bf16; else f32), run the backend's
// unary/binary kernel. Backward: the matching *_backward functor (core/functors.h), and for a
// broadcast binary op, a sum of the gradient back to each input's shape (sum_to).
#include "dplab/core/ops/elementwise.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/activation_layout.h"
#include "dplab/core/ops/reduce.h"

namespace dplab {
namespace {

void check_float(const Tensor& t, const char* what) {
  DPLAB_CHECK(t.defined(), "{}: undefined input tensor", what);
  DPLAB_CHECK(is_floating(t.dtype()), "{}: input {} must be a float tensor", what, t.str());
}

// The output keeps the input's layout (a blocked activation stays blocked through ReLU) where
// it is the backend's own; others get NCHW.
Tensor run_unary(UnaryOp op, float s, const Tensor& x_in) {
  const Backend& be = backend_for(x_in.device());
  const Tensor x = in_native_layout(be, x_in) ? x_in : x_in.contiguous_if_blocked();
  Tensor y = Tensor::empty_like(x);
  be.ew.unary(op, s, x, y);
  return y;
}

// Two operands in one blocked layout give a blocked output; a blocked operand beside a strided
// one (a broadcast, or a gradient that arrived in NCHW) is read in NCHW. The output has the
// operands' dtype when they share one (bf16 + bf16 is bf16, as in PyTorch), else f32.
Tensor run_binary(BinaryOp op, const Tensor& a_in, const Tensor& b_in, const char* what) {
  const Backend& be = backend_for(a_in.device());
  const DType yt = a_in.dtype() == b_in.dtype() ? a_in.dtype() : DType::f32;
  if (in_native_layout(be, a_in) && b_in.layout() == a_in.layout() &&
      a_in.shape() == b_in.shape() && a_in.dtype() == b_in.dtype()) {
    Tensor y = Tensor::empty_like(a_in);
    be.ew.binary(op, a_in, b_in, y);
    return y;
  }
  const Tensor a = a_in.contiguous_if_blocked(), b = b_in.contiguous_if_blocked();
  Tensor y = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), what), yt, a.device());
  be.ew.binary(op, a, b, y);
  return y;
}

class BinaryBackward : public Node {
 public:
  BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& y)
      : op_(op), a_shape_(a.shape()), b_shape_(b.shape()) {
    // Save only what the gradient formula reads (detached: no reference cycle through y).
    if (op == BinaryOp::mul) {
      a_ = a.detach();
      b_ = b.detach();
    } else if (op == BinaryOp::div) {
      b_ = b.detach();
      y_ = y.detach();
    } else if (op == BinaryOp::add_relu) {
      y_ = y.detach();
    }
  }
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    const Tensor& g = grads[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    const bool need_a = next_edges[0].fn != nullptr, need_b = next_edges[1].fn != nullptr;
    Tensor ga, gb;
    switch (op_) {
      case BinaryOp::add:
        ga = g;
        gb = g;
        break;
      case BinaryOp::add_relu:
        ga = gb = run_binary(BinaryOp::relu_backward, g, y_, "add_relu backward");
        break;
      case BinaryOp::sub:
        ga = g;
        if (need_b) gb = run_unary(UnaryOp::neg, 0.f, g);
        break;
      case BinaryOp::mul:
        if (need_a) ga = run_binary(BinaryOp::mul, g, b_, "mul backward");
        if (need_b) gb = run_binary(BinaryOp::mul, g, a_, "mul backward");
        break;
      case BinaryOp::div: {
        // d(a/b)/da = 1/b;  d(a/b)/db = -a/b^2 = -(g/b)·y
        Tensor g_over_b = run_binary(BinaryOp::div, g, b_, "div backward");
        if (need_b) {
          gb = run_binary(BinaryOp::mul, g_over_b, y_, "div backward");
          backend_for(gb.device()).ew.unary(UnaryOp::neg, 0.f, gb, gb);
        }
        if (need_a) ga = g_over_b;
        break;
      }
      default:
        DPLAB_FAIL("BinaryBackward: op {} is not differentiable", static_cast<int>(op_));
    }
    if (need_a) ga = sum_to(ga, a_shape_);
    if (need_b) gb = sum_to(gb, b_shape_);
    return {need_a ? ga : Tensor(), need_b ? gb : Tensor()};
  }
  std::string name() const override { return "BinaryBackward"; }
  void release() override {
    a_ = Tensor();
    b_ = Tensor();
    y_ = Tensor();
  }

 private:
  BinaryOp op_;
  Shape a_shape_, b_shape_;
  Tensor a_, b_, y_;
};

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b, const char* what) {
  check_float(a, what);
  check_float(b, what);
  check_same_device(a, b, what);
  Tensor y = run_binary(op, a, b, what);
  if (any_requires_grad({&a, &b}))
    set_history(std::make_shared<BinaryBackward>(op, a, b, y), {&a, &b}, {&y});
  return y;
}

class UnaryBackward : public Node {
 public:
  UnaryBackward(UnaryOp op, float s, const Tensor& x, const Tensor& y) : op_(op), s_(s) {
    switch (op) {
      case UnaryOp::log:
      case UnaryOp::abs:
      case UnaryOp::square:
        saved_ = x.detach();
        break;
      case UnaryOp::exp:
      case UnaryOp::sqrt:
      case UnaryOp::relu:
      case UnaryOp::sigmoid:
      case UnaryOp::tanh:
        saved_ = y.detach();
        break;
      default:
        break;
    }
  }
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    const Tensor& g = grads[0];
    if (!g.defined()) return {Tensor()};
    switch (op_) {
      case UnaryOp::neg:
        return {run_unary(UnaryOp::neg, 0.f, g)};
      case UnaryOp::exp:
        return {run_binary(BinaryOp::mul, g, saved_, "exp backward")};
      case UnaryOp::log:
        return {run_binary(BinaryOp::div, g, saved_, "log backward")};
      case UnaryOp::sqrt:
        return {run_binary(BinaryOp::sqrt_backward, g, saved_, "sqrt backward")};
      case UnaryOp::abs:
        return {run_binary(BinaryOp::abs_backward, g, saved_, "abs backward")};
      case UnaryOp::square:
        return {run_binary(BinaryOp::square_backward, g, saved_, "square backward")};
      case UnaryOp::relu:
        return {run_binary(BinaryOp::relu_backward, g, saved_, "relu backward")};
      case UnaryOp::sigmoid:
        return {run_binary(BinaryOp::sigmoid_backward, g, saved_, "sigmoid backward")};
      case UnaryOp::tanh:
        return {run_binary(BinaryOp::tanh_backward, g, saved_, "tanh backward")};
      case UnaryOp::add_scalar:
        return {g};
      case UnaryOp::mul_scalar:
        return {run_unary(UnaryOp::mul_scalar, s_, g)};
    }
    return {Tensor()};
  }
  std::string name() const override { return "UnaryBackward"; }
  void release() override { saved_ = Tensor(); }

 private:
  UnaryOp op_;
  float s_;
  Tensor saved_;
};

Tensor unary_op(UnaryOp op, float s, const Tensor& x, const char* what) {
  check_float(x, what);
  Tensor y = run_unary(op, s, x);
  if (any_requires_grad({&x}))
    set_history(std::make_shared<UnaryBackward>(op, s, x, y), {&x}, {&y});
  return y;
}

class CastBackward : public Node {
 public:
  explicit CastBackward(DType from) : from_(from) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {grads[0].to(from_)};  // in the gradient's layout
  }
  std::string name() const override { return "CastBackward"; }

 private:
  DType from_;
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::add, a, b, "add");
}
Tensor add_relu(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::add_relu, a, b, "add_relu");
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::sub, a, b, "sub");
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::mul, a, b, "mul");
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::div, a, b, "div");
}
Tensor add_scalar(const Tensor& x, float s) {
  return unary_op(UnaryOp::add_scalar, s, x, "add_scalar");
}
Tensor mul_scalar(const Tensor& x, float s) {
  return unary_op(UnaryOp::mul_scalar, s, x, "mul_scalar");
}
Tensor neg(const Tensor& x) {
  return unary_op(UnaryOp::neg, 0.f, x, "neg");
}
Tensor exp(const Tensor& x) {
  return unary_op(UnaryOp::exp, 0.f, x, "exp");
}
Tensor log(const Tensor& x) {
  return unary_op(UnaryOp::log, 0.f, x, "log");
}
Tensor sqrt(const Tensor& x) {
  return unary_op(UnaryOp::sqrt, 0.f, x, "sqrt");
}
Tensor abs(const Tensor& x) {
  return unary_op(UnaryOp::abs, 0.f, x, "abs");
}
Tensor square(const Tensor& x) {
  return unary_op(UnaryOp::square, 0.f, x, "square");
}
Tensor relu(const Tensor& x) {
  return unary_op(UnaryOp::relu, 0.f, x, "relu");
}
Tensor sigmoid(const Tensor& x) {
  return unary_op(UnaryOp::sigmoid, 0.f, x, "sigmoid");
}
Tensor tanh(const Tensor& x) {
  return unary_op(UnaryOp::tanh, 0.f, x, "tanh");
}

Tensor cast(const Tensor& x, DType dtype) {
  check_float(x, "cast");
  DPLAB_CHECK(is_floating(dtype), "cast: target dtype {} is not a float dtype (from {})",
              dtype_name(dtype), x.str());
  if (dtype == x.dtype()) return x;
  // In x's layout: a cast of an nhwc or nChw16c activation stays one (pooling a bf16 activation
  // widens it so, and the pooling kernels take the layout).
  Tensor y = x.to(dtype);
  if (any_requires_grad({&x})) set_history(std::make_shared<CastBackward>(x.dtype()), {&x}, {&y});
  return y;
}

void add_(Tensor& acc, const Tensor& g, float alpha) {
  check_same_device(acc, g, "add_");
  DPLAB_CHECK(acc.shape() == g.shape(), "add_: accumulator {} and addend {} differ in shape",
              acc.str(), g.str());
  check_dtype(acc, DType::f32, "add_ accumulator");
  DPLAB_CHECK(is_floating(g.dtype()), "add_: addend {} must be a float tensor", g.str());
  if (in_native_layout(backend_for(acc.device()), acc) &&
      g.layout() == acc.layout()) {  // a flat axpy over both buffers
    backend_for(acc.device()).ew.axpy(alpha, g, acc);
    return;
  }
  DPLAB_CHECK(!acc.is_blocked(), "add_: accumulator {} is blocked, addend {} is not", acc.str(),
              g.str());
  backend_for(acc.device()).ew.axpy(alpha, g.contiguous_if_blocked(), acc);
}

void mul_(Tensor& x, float s) {
  check_dtype(x, DType::f32, "mul_");
  backend_for(x.device()).ew.unary(UnaryOp::mul_scalar, s, x, x);
}

void add_int_(Tensor& t, int64_t v) {
  DPLAB_CHECK(t.defined() && (t.dtype() == DType::i64 || t.dtype() == DType::i32),
              "add_int_: {} must be an i64 or i32 tensor", t.defined() ? t.str() : "undefined");
  backend_for(t.device()).ew.add_int(t, v);
}

}  // namespace dplab
