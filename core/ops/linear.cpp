#include "dplab/core/ops/linear.h"

#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

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

void check_matrix(const Tensor& t, const char* op, const char* what, DType dt = DType::f32) {
  DPLAB_CHECK(t.defined(), "{}: {} is undefined", op, what);
  DPLAB_CHECK(t.dtype() == dt, "{}: {} must be {}, got {}", op, what, dtype_name(dt), t.str());
  DPLAB_CHECK(t.dim() == 2, "{}: {} must be 2-D, got {}", op, what, t.str());
}

// y = op(a) @ op(b) for a fresh [M, N] output of dtype `dt`.
Tensor product(const Operand& a, bool ta, const Operand& b, bool tb, int64_t M, int64_t N,
               DType dt = DType::f32) {
  Tensor y = Tensor::empty({M, N}, dt, a.m.device());
  backend_for(a.m.device()).gemm.gemm(a.t != ta, b.t != tb, 1.0f, a.m, b.m, 0.0f, y);
  return y;
}

// Grad slots: 0 x, 1 weight, 2 bias. y = x @ W^T + b. `dt` is the dtype of x and W: f32, or
// bf16/f16 under CUDA autocast, where dy is cast to it for the GEMMs and dx, dw come out in it
// (the bias gradient sums the f32 dy).
class LinearBackward : public Node {
 public:
  LinearBackward(Operand x, Operand w, bool has_bias, DType dt)
      : x_(std::move(x)), w_(std::move(w)), has_bias_(has_bias), dt_(dt) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    const Operand dy32 = as_operand(grads[0].to(DType::f32));
    // Tensor::to copies into a contiguous tensor, so the GEMM view (dy32.t) carries over.
    const Operand dy = dt_ == DType::f32 ? dy32 : Operand{dy32.m.to(dt_), dy32.t};
    const int64_t N = dy.m.size(dy.t ? 1 : 0), out = dy.m.size(dy.t ? 0 : 1);
    Tensor dx, dw, db;
    if (next_edges[0].fn) dx = product(dy, false, w_, false, N, in_, dt_);   // dy @ W
    if (next_edges[1].fn) dw = product(dy, true, x_, false, out, in_, dt_);  // dy^T @ x
    if (has_bias_ && next_edges[2].fn) {
      db = Tensor::empty({out}, DType::f32, dy.m.device());
      const Tensor dyc = dy32.t ? dy32.m.transpose(0, 1).contiguous() : dy32.m;
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
  DType dt_;
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

// x @ W^T + b for x and W of dtype `dt` (f32; bf16/f16 only from linear(), under CUDA
// autocast); y and the bias are f32 either way (cuBLAS writes the f32 accumulator directly).
Tensor linear_impl(const Tensor& x, const Tensor& weight, const Tensor& bias, DType dt) {
  check_matrix(x, "linear", "input [N, in]", dt);
  check_matrix(weight, "linear", "weight [out, in]", dt);
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
        want_w ? xo : Operand{}, x.requires_grad() ? wo : Operand{}, bias.defined(), dt);
    node->in_ = in;
    set_history(node, {&x, &weight, bias.defined() ? &bias : nullptr}, {&y});
  }
  return y;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (autocast_enabled()) {
    // Mixed precision (core/autocast.h). On CUDA the GEMMs run on 16-bit x and W (tensor
    // cores): x and W go through differentiable casts, so their 16-bit gradients reach the f32
    // tensors as f32; the GEMM writes its f32 accumulator as the output, so y (and everything
    // after it) stays f32 with no extra rounding, and the bias is added in f32. The CPU kernels
    // are f32-only: there the operands are rounded and the f32 op runs.
    if (x.defined() && x.device().is_cuda()) {
      check_matrix(x, "linear", "input [N, in]");
      check_matrix(weight, "linear", "weight [out, in]");
      const DType d = autocast_dtype();
      return linear_impl(cast(x, d), cast(weight, d), bias, d);
    }
    // A bf16 activation (autocast's CPU convolutions make them) is widened first, exactly.
    const Tensor xf = x.defined() && x.dtype() == DType::bf16 ? cast(x, DType::f32) : x;
    const Tensor xa = autocast_operand(xf), wa = autocast_operand(weight);
    AutocastGuard off(DType::f32);
    return linear(xa, wa, bias);
  }
  return linear_impl(x, weight, bias, DType::f32);
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
