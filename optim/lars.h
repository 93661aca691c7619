// LARS, layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017, Algorithm 1), in the form
// the large-batch ImageNet recipes (MLPerf reference) use: the scaled lr goes inside the
// momentum. For each arena segment (one parameter tensor) w with gradient g, per step:
//
//   wd'  = weight_decay if the segment's weight_decay flag is set, else 0
//   trust = eta * ||w|| / (||g|| + wd' * ||w|| + eps)     (non-excluded segments)
//   trust = 1  when ||w|| == 0 or ||g|| == 0, and for segments flagged lars_excluded
//           (ParamArena's default: every 1-d tensor, i.e. biases and BatchNorm gamma/beta)
//   v = momentum * v + lr * trust * (g + wd' * w)          (v starts at 0)
//   w = w - v
//
// So an excluded tensor takes plain momentum SGD with the lr inside the buffer, which equals
// torch.optim.SGD (buffer, then lr) exactly while the lr is constant. Norms are Euclidean
// over the whole tensor, rounded to f32 as the l2_norm op gives them. eta defaults to 0.001,
// eps to 0. A step is two fused kernels per segment (core/kernels/optim.h: lars_norms, then
// lars_step reading the norms where they lie), so it runs on CUDA arenas without host syncs.
#pragma once
#include "dplab/optim/optimizer.h"
#include "dplab/optim/optimizer_options.h"

namespace dplab {

struct LARSOptions {
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 0.0;
  // lars.eta and lars.eps (optim/optimizer_options.cpp declares their defaults)
  double trust_coefficient = lars_option_table().default_double("lars.eta");
  double eps = lars_option_table().default_double("lars.eps");
};

class LARS : public Optimizer {
 public:
  LARS(ParamArena& arena, const LARSOptions& opt);
  std::string name() const override { return "lars"; }
  std::vector<NamedTensor> state() const override;
  void load_state(const std::vector<NamedTensor>& state) override;
  const LARSOptions& options() const { return opt_; }
  const Tensor& momentum_buffer() const { return buf_; }
  // The trust ratio of each segment at the last step (1 for excluded ones), for logging/tests;
  // computed on the host from the norms of the last step (a device-to-host copy on CUDA).
  std::vector<double> last_trust() const;

 protected:
  void update(const Tensor& skip_if) override;

 private:
  LARSOptions opt_;
  Tensor buf_;    // flat, like the arena (undefined when momentum == 0)
  Tensor norms_;  // f32 [2 * segments]: ||w||, ||g|| of each segment at the last step
  double last_weight_decay_ = 0.0;
};

}  // namespace dplab
