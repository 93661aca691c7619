#include "dplab/layers/batchnorm2d.h"

#include "dplab/core/autograd.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/norm.h"

namespace dplab {

BatchNorm2d::BatchNorm2d(int64_t n, const BatchNormOptions& opt) : features_(n), opt_(opt) {
  DPLAB_CHECK(n > 0, "BatchNorm2d({}): num_features must be positive", n);
  DPLAB_CHECK(opt.eps > 0, "BatchNorm2d: eps = {} must be positive", opt.eps);
  if (opt.affine) {
    weight_ = register_parameter("weight", Tensor::ones({n}));
    bias_ = register_parameter("bias", Tensor::zeros({n}));
  }
  if (opt.track_running_stats) {
    running_mean_ = register_buffer("running_mean", Tensor::zeros({n}));
    running_var_ = register_buffer("running_var", Tensor::ones({n}));
    num_batches_tracked_ = register_buffer("num_batches_tracked", Tensor::zeros({}, DType::i64));
  }
}

void BatchNorm2d::reset_parameters(PhiloxStream&) {
  if (weight_.defined()) {
    weight_.fill_(1.0);
    bias_.fill_(0.0);
  }
  if (running_mean_.defined()) {
    running_mean_.fill_(0.0);
    running_var_.fill_(1.0);
    num_batches_tracked_.fill_(0.0);
  }
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  return run(x, false);
}

Tensor BatchNorm2d::forward_relu(const Tensor& x) {
  return run(x, true);
}

Tensor BatchNorm2d::forward_add_relu(const Tensor& x, const Tensor& residual) {
  return run(x, true, residual);
}

Tensor BatchNorm2d::run(const Tensor& x, bool relu, const Tensor& residual) {
  // Without running statistics PyTorch normalises by the batch in eval too.
  const bool use_batch = is_training() || !running_mean_.defined();
  // The i64 counter is incremented where it lives: a host round trip (read, add 1, write back)
  // would synchronise the host with the device in every BatchNorm layer of every training step.
  if (is_training() && num_batches_tracked_.defined()) add_int_(num_batches_tracked_, 1);
  const float momentum = static_cast<float>(opt_.momentum), eps = static_cast<float>(opt_.eps);
  if (residual.defined())
    return batch_norm2d_add_relu(x, residual, weight_, bias_, running_mean_, running_var_,
                                 use_batch, momentum, eps);
  const auto op = relu ? batch_norm2d_relu : batch_norm2d;
  return op(x, weight_, bias_, running_mean_, running_var_, use_batch, momentum, eps);
}

std::string BatchNorm2d::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", features_,
                     opt_.eps, opt_.momentum, opt_.affine ? "True" : "False",
                     opt_.track_running_stats ? "True" : "False");
}

}  // namespace dplab
