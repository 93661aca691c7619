// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"), with exactly the
// semantics of torch.optim.AdamW (amsgrad off, maximize off): at step t = 1, 2, ...
//
//   p = p * (1 - lr * wd)                    decoupled weight decay, before the Adam update
//   m = beta1 * m + (1 - beta1) * g          exp_avg,    starts at 0
//   v = beta2 * v + (1 - beta2) * g * g      exp_avg_sq, starts at 0
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//
// (eps is added to sqrt(v_hat), as PyTorch does, not inside the square root.) Weight decay
// applies to the segments whose weight_decay flag is set, as SGD's does. The lr is the
// Optimizer's lr (the lr schedule sets it each step); t counts this optimizer's steps, so a
// resumed run continues the bias corrections where it stopped. Defaults are PyTorch's; the
// trainer reads lr and wd from the shared keys (see train/loop/optimizer_options.h).
//
// Checkpoint state: optim.exp_avg and optim.exp_avg_sq (flat f32 like the arena) and
// optim.steps (t of the last step).
#pragma once
#include "dplab/optim/optimizer.h"
#include "dplab/optim/optimizer_options.h"

namespace dplab {

struct AdamWOptions {
  double lr = 1e-3;
  // adamw.beta1, adamw.beta2, adamw.eps (optim/optimizer_options.cpp declares their defaults)
  double beta1 = adamw_option_table().default_double("adamw.beta1");
  double beta2 = adamw_option_table().default_double("adamw.beta2");
  double eps = adamw_option_table().default_double("adamw.eps");
  double weight_decay = 1e-2;
};

class AdamW : public Optimizer {
 public:
  AdamW(ParamArena& arena, const AdamWOptions& opt);
  std::string name() const override { return "adamw"; }
  std::vector<NamedTensor> state() const override;
  void load_state(const std::vector<NamedTensor>& state) override;
  const AdamWOptions& options() const { return opt_; }
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 protected:
  void update(const Tensor& skip_if) override;

 private:
  AdamWOptions opt_;
  Tensor m_, v_;  // flat, like the arena
};

}  // namespace dplab
