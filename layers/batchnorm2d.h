// nn.BatchNorm2d: weight (gamma) and bias (beta) parameters; running_mean, running_var and
// num_batches_tracked (i64 scalar) buffers, named and initialised as in PyTorch.
#pragma once
#include "dplab/layers/module.h"

namespace dplab {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormOptions& opt = {});
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)), fused into one pass each way where the backend can (batch_norm2d_relu).
  Tensor forward_relu(const Tensor& x);
  // relu(forward(x) + residual), fused likewise (batch_norm2d_add_relu): a residual block's end.
  Tensor forward_add_relu(const Tensor& x, const Tensor& residual);
  std::string type_name() const override { return "BatchNorm2d"; }
  std::string extra_repr() const override;
  // weight 1, bias 0, running_mean 0, running_var 1, num_batches_tracked 0 (no draws).
  void reset_parameters(PhiloxStream& rng) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }

 private:
  Tensor run(const Tensor& x, bool relu, const Tensor& residual = Tensor());

  int64_t features_;
  BatchNormOptions opt_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

}  // namespace dplab
