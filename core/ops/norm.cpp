// batch_norm2d: validation, output allocation, and a backward node that reuses the statistics
// the forward normalised with (batch statistics in training, running ones in eval).
#include "dplab/core/ops/norm.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/activation_layout.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {
namespace {

void check_channel_vector(const Tensor& t, int64_t c, const char* what) {
  if (!t.defined()) return;
  check_dtype(t, DType::f32, what);
  check_shape(t, {c}, what);
  DPLAB_CHECK(t.is_contiguous(), "{}: {} must be contiguous", what, t.str());
}

// What follows the batch norm in the fused op: nothing, ReLU, or a residual add and ReLU.
enum class Tail { none, relu, add_relu };

class BatchNormBackward : public Node {
 public:
  // y: the fused op's output (its ReLU mask), undefined for plain batch norm. Grad slots: 0 x,
  // 1 weight, 2 bias, and 3 the residual for Tail::add_relu.
  BatchNormBackward(const Tensor& x, const Tensor& y, const Tensor& weight, Tensor mean,
                    Tensor invstd, float eps, bool training, Tail tail)
      : x_(x.detach()),
        y_(y.defined() ? y.detach() : Tensor()),
        weight_(weight.defined() ? weight.detach() : Tensor()),
        mean_(std::move(mean)),
        invstd_(std::move(invstd)),
        eps_(eps),
        training_(training),
        tail_(tail) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return std::vector<Tensor>(tail_ == Tail::add_relu ? 4 : 3);
    // dy in x's layout (a blocked x gets dx blocked too: the convolution before wants it so).
    const Tensor g = in_dtype_layout(grads[0], x_.dtype(), x_.layout());
    const int64_t c = x_.shape()[1];
    Tensor dx, dw, db;
    if (next_edges[0].fn) dx = Tensor::empty_like(x_);
    if (next_edges[1].fn) dw = Tensor::empty({c}, DType::f32, x_.device());
    if (next_edges[2].fn) db = Tensor::empty({c}, DType::f32, x_.device());
    const NormKernels& k = backend_for(x_.device()).norm;
    switch (tail_) {
      case Tail::none:
        k.batch_norm_backward(g, x_, weight_, mean_, invstd_, eps_, training_, dx, dw, db);
        return {dx, dw, db};
      case Tail::relu:
        k.batch_norm_relu_backward(g, x_, y_, weight_, mean_, invstd_, eps_, training_, dx, dw, db);
        return {dx, dw, db};
      case Tail::add_relu: {
        Tensor dr;
        if (next_edges[3].fn) dr = Tensor::empty_like(x_);
        k.batch_norm_add_relu_backward(g, x_, y_, weight_, mean_, invstd_, eps_, training_, dx, dr,
                                       dw, db);
        return {dx, dw, db, dr};
      }
    }
    return {};
  }
  std::string name() const override {
    return tail_ == Tail::add_relu ? "BatchNormAddReluBackward"
           : tail_ == Tail::relu   ? "BatchNormReluBackward"
                                   : "BatchNormBackward";
  }
  void release() override { x_ = y_ = weight_ = mean_ = invstd_ = Tensor(); }

 private:
  Tensor x_, y_, weight_, mean_, invstd_;
  float eps_;  // the forward's (issue #19, item 5)
  bool training_;
  Tail tail_;
};

// tail relu / add_relu: the fused kernels, which the caller has checked the backend has.
// residual: for add_relu only.
Tensor batch_norm_impl(const Tensor& x_in, const Tensor& residual_in, const Tensor& weight,
                       const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                       bool training, float momentum, float eps, Tail tail) {
  DPLAB_CHECK(x_in.defined() && x_in.dim() >= 2, "batch_norm2d: input must be [N, C, ...], got {}",
              x_in.str());
  DPLAB_CHECK(x_in.dtype() == DType::f32 || x_in.dtype() == DType::bf16,
              "batch_norm2d: input must be f32 or bf16 (a bf16 activation under autocast: "
              "statistics and parameters stay f32, y is bf16), got {}",
              x_in.str());
  const int64_t c = x_in.shape()[1];
  check_channel_vector(weight, c, "batch_norm2d weight");
  check_channel_vector(bias, c, "batch_norm2d bias");
  check_channel_vector(running_mean, c, "batch_norm2d running_mean");
  check_channel_vector(running_var, c, "batch_norm2d running_var");
  DPLAB_CHECK(running_mean.defined() == running_var.defined(),
              "batch_norm2d: running_mean and running_var must be both given or both absent");
  DPLAB_CHECK(eps > 0.f, "batch_norm2d: eps = {} must be positive", eps);
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    if (t->defined()) check_same_device(x_in, *t, "batch_norm2d");
  const Backend& be = backend_for(x_in.device());
  DPLAB_CHECK(x_in.dtype() == DType::f32 || be.bf16_kernels,
              "batch_norm2d: the {} backend takes f32 activations only, got {}", be.name,
              x_in.str());
  // A blocked activation stays blocked (y too) where the backend has blocked kernels.
  const Tensor x = activation_operand(be, x_in);
  // The residual in x's dtype and layout, so the fused kernel reads both alike.
  const Tensor residual =
      tail == Tail::add_relu ? in_dtype_layout(residual_in, x.dtype(), x.layout()) : Tensor();
  if (tail == Tail::add_relu) {
    check_same_device(x_in, residual_in, "batch_norm2d_add_relu");
    DPLAB_CHECK(residual_in.shape() == x_in.shape(),
                "batch_norm2d_add_relu: residual {} must have the input's shape {}",
                residual_in.str(), shape_str(x_in.shape()));
  }
  Tensor y = Tensor::empty_like(x);
  Tensor mean, invstd;
  if (training) {
    DPLAB_CHECK(x.numel() / c > 1 || x.numel() == 0,
                "batch_norm2d: training needs more than one value per channel, got {}", x.str());
    mean = Tensor::empty({c}, DType::f32, x.device());
    invstd = Tensor::empty({c}, DType::f32, x.device());
    Tensor rm = running_mean, rv = running_var;  // handles: updated in place
    if (tail == Tail::add_relu)
      be.norm.batch_norm_add_relu_forward_train(x, residual, weight, bias, rm, rv, momentum, eps, y,
                                                mean, invstd);
    else
      (tail == Tail::relu ? be.norm.batch_norm_relu_forward_train
                          : be.norm.batch_norm_forward_train)(x, weight, bias, rm, rv, momentum,
                                                              eps, y, mean, invstd);
  } else {
    DPLAB_CHECK(running_mean.defined(),
                "batch_norm2d: eval mode needs running_mean and running_var");
    if (tail == Tail::add_relu)
      be.norm.batch_norm_add_relu_forward_eval(x, residual, weight, bias, running_mean, running_var,
                                               eps, y);
    else
      (tail == Tail::relu ? be.norm.batch_norm_relu_forward_eval : be.norm.batch_norm_forward_eval)(
          x, weight, bias, running_mean, running_var, eps, y);
  }
  if (any_requires_grad({&x_in, &weight, &bias, &residual_in})) {
    if (!training) {
      // Snapshot the statistics used (running stats may change before backward runs).
      NoGradGuard ng;
      mean = running_mean.clone();
      invstd = Tensor::empty({c}, DType::f32, x.device());
      Tensor v = Tensor::empty({c}, DType::f32, x.device());
      be.ew.unary(UnaryOp::add_scalar, eps, running_var, v);
      be.ew.unary(UnaryOp::sqrt, 0.f, v, v);
      be.ew.binary(BinaryOp::div, Tensor::ones({c}, DType::f32, x.device()), v, invstd);
    }
    std::vector<const Tensor*> inputs{&x_in, &weight, &bias};
    if (tail == Tail::add_relu) inputs.push_back(&residual_in);
    set_history(std::make_shared<BatchNormBackward>(x, tail != Tail::none ? y : Tensor(), weight,
                                                    mean, invstd, eps, training, tail),
                inputs, {&y});
  }
  return y;
}

}  // namespace

Tensor batch_norm2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    float momentum, float eps) {
  return batch_norm_impl(x, Tensor(), weight, bias, running_mean, running_var, training, momentum,
                         eps, Tail::none);
}

Tensor batch_norm2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var, bool training,
                         float momentum, float eps) {
  const NormKernels& k = backend_for(x.defined() ? x.device() : Device::cpu()).norm;
  if (!k.batch_norm_relu_forward_train || !k.batch_norm_relu_forward_eval ||
      !k.batch_norm_relu_backward)
    return relu(batch_norm2d(x, weight, bias, running_mean, running_var, training, momentum, eps));
  return batch_norm_impl(x, Tensor(), weight, bias, running_mean, running_var, training, momentum,
                         eps, Tail::relu);
}

Tensor batch_norm2d_add_relu(const Tensor& x, const Tensor& residual, const Tensor& weight,
                             const Tensor& bias, const Tensor& running_mean,
                             const Tensor& running_var, bool training, float momentum, float eps) {
  DPLAB_CHECK(residual.defined(), "batch_norm2d_add_relu: the residual is undefined");
  const NormKernels& k = backend_for(x.defined() ? x.device() : Device::cpu()).norm;
  if (!k.batch_norm_add_relu_forward_train || !k.batch_norm_add_relu_forward_eval ||
      !k.batch_norm_add_relu_backward)
    return add_relu(
        batch_norm2d(x, weight, bias, running_mean, running_var, training, momentum, eps),
        residual);
  return batch_norm_impl(x, residual, weight, bias, running_mean, running_var, training, momentum,
                         eps, Tail::add_relu);
}

}  // namespace dplab
