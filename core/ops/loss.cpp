// softmax / log_softmax / cross_entropy: validation, allocation, backward nodes.
#include "dplab/core/ops/loss.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {
namespace {

class SoftmaxBackward : public Node {
 public:
  SoftmaxBackward(const Tensor& y, int dim, bool log) : y_(y.detach()), dim_(dim), log_(log) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor g = grads[0].to(DType::f32).contiguous();
    Tensor dx = Tensor::empty(y_.shape(), DType::f32, y_.device());
    backend_for(y_.device()).loss.softmax_backward(y_, g, dim_, log_, dx);
    return {dx};
  }
  std::string name() const override { return log_ ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  void release() override { y_ = Tensor(); }

 private:
  Tensor y_;
  int dim_;
  bool log_;
};

Tensor softmax_impl(const Tensor& x_in, int dim, bool log, const char* what) {
  DPLAB_CHECK(x_in.defined() && x_in.dim() > 0, "{}: needs a tensor with at least one dim", what);
  DPLAB_CHECK(is_floating(x_in.dtype()), "{}: input {} must be a float tensor", what, x_in.str());
  const int d = dim < 0 ? dim + x_in.dim() : dim;
  DPLAB_CHECK(d >= 0 && d < x_in.dim(), "{}: dim {} out of range for {}", what, dim, x_in.str());
  const Tensor x = x_in.to(DType::f32).contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  backend_for(x.device()).loss.softmax_forward(x, d, log, y);
  if (any_requires_grad({&x_in}))
    set_history(std::make_shared<SoftmaxBackward>(y, d, log), {&x_in}, {&y});
  return y;
}

class CrossEntropyBackward : public Node {
 public:
  CrossEntropyBackward(const Tensor& logits, const Tensor& target, Tensor lse, float s)
      : logits_(logits.detach()), target_(target), lse_(std::move(lse)), s_(s) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const int64_t n = logits_.shape()[0];
    Tensor d = Tensor::empty(logits_.shape(), DType::f32, logits_.device());
    const Backend& be = backend_for(logits_.device());
    if (logits_.device().is_cpu()) {
      const float scale = n > 0 ? grads[0].item() / static_cast<float>(n) : 0.f;
      be.loss.cross_entropy_backward(logits_, target_, lse_, s_, scale, d);
      return {d};
    }
    // On a device the upstream gradient stays there: item() would copy it back and make the host
    // wait for the compute stream in every backward pass. The kernel scales by 1/N and the
    // upstream scalar multiplies on the device; with the usual upstream gradient of 1 (or a
    // power of two, a loss scale) the result has the same bits as the single scale g/N.
    be.loss.cross_entropy_backward(logits_, target_, lse_, s_,
                                   n > 0 ? 1.f / static_cast<float>(n) : 0.f, d);
    be.ew.binary(BinaryOp::mul, d, grads[0].to(DType::f32), d);
    return {d};
  }
  std::string name() const override { return "CrossEntropyBackward"; }
  void release() override { logits_ = target_ = lse_ = Tensor(); }

 private:
  Tensor logits_, target_, lse_;
  float s_;
};

}  // namespace

Tensor softmax(const Tensor& x, int dim) {
  return softmax_impl(x, dim, false, "softmax");
}
Tensor log_softmax(const Tensor& x, int dim) {
  return softmax_impl(x, dim, true, "log_softmax");
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target_in, float label_smoothing) {
  DPLAB_CHECK(logits_in.defined() && logits_in.dim() == 2,
              "cross_entropy: logits must be [N, C], got {}", logits_in.str());
  DPLAB_CHECK(is_floating(logits_in.dtype()), "cross_entropy: logits {} must be float",
              logits_in.str());
  DPLAB_CHECK(target_in.defined() && target_in.dtype() == DType::i64,
              "cross_entropy: target must be i64 class indices, got {}", target_in.str());
  check_shape(target_in, {logits_in.shape()[0]}, "cross_entropy target");
  check_same_device(logits_in, target_in, "cross_entropy");
  DPLAB_CHECK(label_smoothing >= 0.f && label_smoothing <= 1.f,
              "cross_entropy: label_smoothing = {} must be in [0, 1]", label_smoothing);
  DPLAB_CHECK(logits_in.shape()[1] > 0, "cross_entropy: logits {} have no classes",
              logits_in.str());
  const Tensor logits = logits_in.to(DType::f32).contiguous();
  const Tensor target = target_in.contiguous();
  Tensor loss = Tensor::empty({}, DType::f32, logits.device());
  Tensor lse = Tensor::empty({logits.shape()[0]}, DType::f32, logits.device());
  backend_for(logits.device())
      .loss.cross_entropy_forward(logits, target, label_smoothing, loss, lse);
  if (any_requires_grad({&logits_in}))
    set_history(std::make_shared<CrossEntropyBackward>(logits, target, lse, label_smoothing),
                {&logits_in}, {&loss});
  return loss;
}

}  // namespace dplab
