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

class BatchNormBackward : public Node {
 public:
  // y: the fused batch_norm2d_relu's output (its mask), undefined for plain batch norm.
  BatchNormBackward(const Tensor& x, const Tensor& y, const Tensor& weight, Tensor mean,
                    Tensor invstd, float eps, bool training)
      : x_(x.detach()),
        y_(y.defined() ? y.detach() : Tensor()),
        weight_(weight.defined() ? weight.detach() : Tensor()),
        mean_(std::move(mean)),
        invstd_(std::move(invstd)),
        eps_(eps),
        training_(training) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    // dy in x's layout (a blocked x gets dx blocked too: the convolution before wants it so).
    const Tensor g = f32_in_layout(grads[0], x_.layout());
    const int64_t c = x_.shape()[1];
    Tensor dx, dw, db;
    if (next_edges[0].fn) dx = Tensor::empty_like(x_);
    if (next_edges[1].fn) dw = Tensor::empty({c}, DType::f32, x_.device());
    if (next_edges[2].fn) db = Tensor::empty({c}, DType::f32, x_.device());
    const NormKernels& k = backend_for(x_.device()).norm;
    if (y_.defined())
      k.batch_norm_relu_backward(g, x_, y_, weight_, mean_, invstd_, eps_, training_, dx, dw, db);
    else
      k.batch_norm_backward(g, x_, weight_, mean_, invstd_, eps_, training_, dx, dw, db);
    return {dx, dw, db};
  }
  std::string name() const override {
    return y_.defined() ? "BatchNormReluBackward" : "BatchNormBackward";
  }
  void release() override { x_ = y_ = weight_ = mean_ = invstd_ = Tensor(); }

 private:
  Tensor x_, y_, weight_, mean_, invstd_;
  float eps_;  // the forward's (issue #19, item 5)
  bool training_;
};

// relu: the fused kernels, which the caller has checked the backend has.
Tensor batch_norm_impl(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       float momentum, float eps, bool relu) {
  DPLAB_CHECK(x_in.defined() && x_in.dim() >= 2, "batch_norm2d: input must be [N, C, ...], got {}",
              x_in.str());
  check_dtype(x_in, DType::f32, "batch_norm2d input");
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
  // A blocked activation stays blocked (y too) where the backend has blocked kernels.
  const Tensor x = activation_operand(be, x_in);
  Tensor y = Tensor::empty_like(x);
  Tensor mean, invstd;
  if (training) {
    DPLAB_CHECK(x.numel() / c > 1 || x.numel() == 0,
                "batch_norm2d: training needs more than one value per channel, got {}", x.str());
    mean = Tensor::empty({c}, DType::f32, x.device());
    invstd = Tensor::empty({c}, DType::f32, x.device());
    Tensor rm = running_mean, rv = running_var;  // handles: updated in place
    const auto f = relu ? be.norm.batch_norm_relu_forward_train : be.norm.batch_norm_forward_train;
    f(x, weight, bias, rm, rv, momentum, eps, y, mean, invstd);
  } else {
    DPLAB_CHECK(running_mean.defined(),
                "batch_norm2d: eval mode needs running_mean and running_var");
    const auto f = relu ? be.norm.batch_norm_relu_forward_eval : be.norm.batch_norm_forward_eval;
    f(x, weight, bias, running_mean, running_var, eps, y);
  }
  if (any_requires_grad({&x_in, &weight, &bias})) {
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
    set_history(std::make_shared<BatchNormBackward>(x, relu ? y : Tensor(), weight, mean, invstd,
                                                    eps, training),
                {&x_in, &weight, &bias}, {&y});
  }
  return y;
}

}  // namespace

Tensor batch_norm2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    float momentum, float eps) {
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps,
                         false);
}

Tensor batch_norm2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var, bool training,
                         float momentum, float eps) {
  const NormKernels& k = backend_for(x.defined() ? x.device() : Device::cpu()).norm;
  if (!k.batch_norm_relu_forward_train || !k.batch_norm_relu_forward_eval ||
      !k.batch_norm_relu_backward)
    return relu(batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps,
                                false));
  return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps, true);
}

}  // namespace dplab
