#include "dplab/comm/algorithms/diloco.h"

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

DiLoCoOptions DiLoCoOptions::from_options(const Options& opt) {
  DiLoCoOptions o;
  o.H = opt.get_int("diloco.H", 50);
  o.outer_lr = opt.get_double("diloco.outer_lr", 0.7);
  o.outer_momentum = opt.get_double("diloco.outer_momentum", 0.9);
  o.outer_nesterov = opt.get_bool("diloco.outer_nesterov", true);
  DPLAB_CHECK(o.H >= 1, "option diloco.H: expected >= 1 inner steps per round, got {}", o.H);
  DPLAB_CHECK(o.outer_lr >= 0, "option diloco.outer_lr: expected >= 0, got {}", o.outer_lr);
  DPLAB_CHECK(o.outer_momentum >= 0 && o.outer_momentum < 1,
              "option diloco.outer_momentum: expected a value in [0, 1), got {}", o.outer_momentum);
  return o;
}

DiLoCoStrategy::DiLoCoStrategy(const Options& opt)
    : DiLoCoStrategy(std::make_shared<Topology>(Topology::from_options(opt)), opt) {}

DiLoCoStrategy::DiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)), opt_(DiLoCoOptions::from_options(opt)) {}

void DiLoCoStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // θ(0): rank 0's model on every rank
  theta_ = ctx.arena->params().clone();
  delta_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  if (opt_.outer_momentum > 0)
    momentum_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
}

void DiLoCoStrategy::outer_step() {
  NoGradGuard no_grad;
  Tensor params = ctx_.arena->params();  // a handle on the arena: θ_i(t)
  // Line 11: δ_i(t) = θ(t−1) − θ_i(t).
  delta_.copy_(theta_);
  add_(delta_, params, -1.f);
  // Line 13: Δ(t) = (1/k) Σ_i δ_i(t), one allreduce.
  if (world_size() > 1) meter().allreduce(world(), "outer gradient", delta_, ReduceOp::average);
  // Line 15: θ(t) = OuterOpt(θ(t−1), Δ(t)): PyTorch's SGD (Nesterov) on the flat vector.
  SgdStepArgs a;
  a.lr = static_cast<float>(opt_.outer_lr);
  a.momentum = static_cast<float>(opt_.outer_momentum);
  a.nesterov = opt_.outer_nesterov && opt_.outer_momentum > 0;
  a.first_step = outer_steps_ == 0;
  backend_for(theta_.device()).optim.sgd_step(theta_, delta_, momentum_, a);
  // Line 3 of the next round: θ_i(t+1) = θ(t).
  params.copy_(theta_);
  ++outer_steps_;
  inner_steps_ = 0;
}

void DiLoCoStrategy::after_step(const StepInfo& step) {
  ++inner_steps_;
  if (inner_steps_ == opt_.H || step.last_in_epoch()) outer_step();
}

void DiLoCoStrategy::finish_training() {
  // A run stopped mid-round (max_steps): every rank stops at the same step, so all reach this.
  if (inner_steps_ > 0) outer_step();
}

void DiLoCoStrategy::drain() { average_buffers(); }

std::map<std::string, double> DiLoCoStrategy::state() const {
  return {{"H", double(opt_.H)}, {"outer_steps", double(outer_steps_)}};
}

void DiLoCoStrategy::save_algorithm_state(StateDict& out) const {
  out.put_int("H", opt_.H);
  out.put_int("inner_steps", inner_steps_);
  out.put_int("outer_steps", outer_steps_);
  out.put_tensor("theta_global", theta_);
  if (momentum_.defined()) out.put_tensor("outer_momentum", momentum_);
}

void DiLoCoStrategy::load_algorithm_state(const StateDict& in) {
  // A round in progress only makes sense with the same H.
  state_int(in, name(), "H", opt_.H, opt_.H);
  const int64_t inner = state_int(in, name(), "inner_steps", 0, opt_.H - 1);
  const int64_t outer = state_int(in, name(), "outer_steps", 0, INT64_MAX);
  restore_tensor(in, name(), "theta_global", theta_);
  const bool saved_momentum = in.has("outer_momentum");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(saved_momentum == momentum_.defined(),
              "{}: diloco state {} an outer momentum buffer but diloco.outer_momentum is {}", where,
              saved_momentum ? "has" : "lacks", opt_.outer_momentum);
  if (momentum_.defined()) restore_tensor(in, name(), "outer_momentum", momentum_);
  inner_steps_ = inner;
  outer_steps_ = outer;
}

std::unique_ptr<Strategy> make_diloco_strategy(const Options& opt) {
  return std::make_unique<DiLoCoStrategy>(opt);
}

}  // namespace dplab
