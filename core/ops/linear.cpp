#include "dplab/core/ops/linear.h"

#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {
namespace {

// A matrix as GEMM sees it: `m` has unit column stride and op(m) (m, or m^T when `t`) is the
// logical matrix. A transposed view of a contiguous matrix is passed as its transpose with
// t = true, so matmul(a, transpose(b)) copies nothing.
struct Operand {
  Tensor m;
  bool t = false;
};

Operand as_operand(const Tensor& x) {
  if (x.size(1) <= 1 || x.stride(1) == 1) {
    if (x.size(0) <= 1 || x.stride(0) >= x.size(1)) return {x, false};
  }
  if (x.size(0) > 1 && x.stride(0) == 1 && x.stride(1) >= x.size(0))
    return {x.transpose(0, 1), true};
  return {x.contiguous(), false};
}

void check_matrix(const Tensor& t, const char* op, const char* what) {
  DPLAB_CHECK(t.defined(), "{}: {} is undefined", op, what);
  DPLAB_CHECK(t.dtype() == DType::f32, "{}: {} must be f32, got {}", op, what, t.str());
  DPLAB_CHECK(t.dim() == 2, "{}: {} must be 2-D, got {}", op, what, t.str());
}

// y = op(a) @ op(b) for a fresh [M, N] output.
Tensor product(const Operand& a, bool ta, const Operand& b, bool tb, int64_t M, int64_t N) {
  Tensor y = Tensor::empty({M, N}, DType::f32, a.m.device());
  backend_for(a.m.device()).gemm.gemm(a.t != ta, b.t != tb, 1.0f, a.m, b.m, 0.0f, y);
  return y;
}

// Grad slots: 0 x, 1 weight, 2 bias. y = x @ W^T + b.
class LinearBackward : public Node {
 public:
  LinearBackward(Operand x, Operand w, bool has_bias)
      : x_(std::move(x)), w_(std::move(w)), has_bias_(has_bias) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    const Operand dy = as_operand(grads[0].to(DType::f32));
    const int64_t N = dy.m.size(dy.t ? 1 : 0), out = dy.m.size(dy.t ? 0 : 1);
    Tensor dx, dw, db;
    if (next_edges[0].fn) dx = product(dy, false, w_, false, N, in_);   // dy @ W
    if (next_edges[1].fn) dw = product(dy, true, x_, false, out, in_);  // dy^T @ x
    if (has_bias_ && next_edges[2].fn) {
      db = Tensor::empty({out}, DType::f32, dy.m.device());
      const Tensor dyc = dy.t ? dy.m.transpose(0, 1).contiguous() : dy.m;
      backend_for(dyc.device()).gemm.sum_rows(dyc, db);
    }
    return {dx, dw, db};
  }
  std::string name() const override { return "LinearBackward"; }
  void release() override {
    x_ = {};
    w_ = {};
  }
  int64_t in_ = 0;

 private:
  Operand x_, w_;
  bool has_bias_;
};

// Grad slots: 0 a, 1 b. y = a @ b.
class MatmulBackward : public Node {
 public:
  MatmulBackward(Operand a, Operand b, int64_t M, int64_t K, int64_t N)
      : a_(std::move(a)), b_(std::move(b)), M_(M), K_(K), N_(N) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor(), Tensor()};
    const Operand dy = as_operand(grads[0].to(DType::f32));
    Tensor da, db;
    if (next_edges[0].fn) da = product(dy, false, b_, true, M_, K_);  // dy @ b^T
    if (next_edges[1].fn) db = product(a_, true, dy, false, K_, N_);  // a^T @ dy
    return {da, db};
  }
  std::string name() const override { return "MatmulBackward"; }
  void release() override {
    a_ = {};
    b_ = {};
  }

 private:
  Operand a_, b_;
  int64_t M_, K_, N_;
};

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (autocast_enabled()) {  // mixed precision (core/autocast.h): rounded operands, f32 math
    const Tensor xa = autocast_operand(x), wa = autocast_operand(weight);
    AutocastGuard off(DType::f32);
    return linear(xa, wa, bias);
  }
  check_matrix(x, "linear", "input [N, in]");
  check_matrix(weight, "linear", "weight [out, in]");
  check_same_device(x, weight, "linear input and weight");
  const int64_t N = x.size(0), in = x.size(1), out = weight.size(0);
  DPLAB_CHECK(weight.size(1) == in, "linear: input features {} != weight in_features {} ({})", in,
              weight.size(1), shape_str(weight.shape()));
  if (bias.defined()) {
    DPLAB_CHECK(bias.dtype() == DType::f32 && bias.dim() == 1 && bias.size(0) == out,
                "linear: bias must be f32 [{}], got {}", out, bias.str());
    check_same_device(x, bias, "linear input and bias");
  }
  const Operand xo = as_operand(x), wo = as_operand(weight);
  Tensor y = product(xo, false, wo, true, N, out);  // x @ W^T
  if (bias.defined()) backend_for(x.device()).gemm.add_row_bias(y, bias.contiguous());
  if (any_requires_grad({&x, &weight, &bias})) {
    const bool want_w = weight.requires_grad();
    auto node = std::make_shared<LinearBackward>(
        want_w ? xo : Operand{}, x.requires_grad() ? wo : Operand{}, bias.defined());
    node->in_ = in;
    set_history(node, {&x, &weight, bias.defined() ? &bias : nullptr}, {&y});
  }
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_matrix(a, "matmul", "a [M, K]");
  check_matrix(b, "matmul", "b [K, N]");
  check_same_device(a, b, "matmul a and b");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  DPLAB_CHECK(b.size(0) == K, "matmul: a {} @ b {}: inner dims {} != {}", shape_str(a.shape()),
              shape_str(b.shape()), K, b.size(0));
  const Operand ao = as_operand(a), bo = as_operand(b);
  Tensor y = product(ao, false, bo, false, M, N);
  if (any_requires_grad({&a, &b})) {
    auto node = std::make_shared<MatmulBackward>(b.requires_grad() ? ao : Operand{},
                                                 a.requires_grad() ? bo : Operand{}, M, K, N);
    set_history(node, {&a, &b}, {&y});
  }
  return y;
}

}  // namespace dplab
