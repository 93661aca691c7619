#include "dplab/comm/algorithms/diloco.h"

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

DiLoCoOptions DiLoCoOptions::from_options(const Options& opt) {
  const OptionTable& t = diloco_option_table();
  DiLoCoOptions o;
  o.H = t.get_int(opt, "diloco.H");
  DPLAB_CHECK_OPTION(!opt.has("diloco.outer_nesterov"),
                     "option diloco.outer_nesterov = {} was replaced by diloco.outer_optim "
                     "(nesterov, sgd or adam)",
                     opt.values().at("diloco.outer_nesterov"));
  const std::string name = t.get_string(opt, "diloco.outer_optim");
  o.outer_optim = diloco_outer_optim(name);
  const bool adam = o.outer_optim == DiLoCoOuterOptim::adam;
  // Only the chosen outer optimizer's keys are read; a set key of the other one would be
  // silently ignored, so it is refused.
  for (const char* key : adam ? std::vector<const char*>{"diloco.outer_momentum"}
                              : std::vector<const char*>{"diloco.outer_beta1", "diloco.outer_beta2",
                                                         "diloco.outer_eps"})
    DPLAB_CHECK_OPTION(!opt.has(key), "option {} = {} does not apply to diloco.outer_optim = {}",
                       key, opt.values().at(key), name);
  // PyTorch's defaults for Adam (torch.optim.Adam: lr 1e-3), the paper's for Nesterov SGD.
  o.outer_lr =
      adam ? t.get_double(opt, "diloco.outer_lr", 1e-3) : t.get_double(opt, "diloco.outer_lr");
  if (adam) {
    o.outer_beta1 = t.get_double(opt, "diloco.outer_beta1");
    o.outer_beta2 = t.get_double(opt, "diloco.outer_beta2");
    o.outer_eps = t.get_double(opt, "diloco.outer_eps");
    o.outer_momentum = 0;
  } else {
    o.outer_momentum = t.get_double(opt, "diloco.outer_momentum");
  }
  o.round_spans_epochs = t.get_bool(opt, "diloco.round_spans_epochs");
  return o;
}

namespace {
PeriodicSyncConfig diloco_rounds(const DiLoCoOptions& o) {
  return {.period = o.H,
          .round_spans_epochs = o.round_spans_epochs,
          .period_key = "H",
          .steps_key = "inner_steps",
          .rounds_key = "outer_steps",
          .period_option = ""};
}
}  // namespace

DiLoCoStrategy::DiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DiLoCoStrategy(std::move(topo), DiLoCoOptions::from_options(opt)) {}

DiLoCoStrategy::DiLoCoStrategy(std::shared_ptr<Topology> topo, const DiLoCoOptions& o)
    : PeriodicSyncStrategy(std::move(topo), diloco_rounds(o)), opt_(o) {}

void DiLoCoStrategy::setup(TrainContext& ctx) {
  PeriodicSyncStrategy::setup(ctx);  // θ(0): rank 0's model on every rank
  theta_ = ctx.arena->params().clone();
  delta_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  if (opt_.outer_optim == DiLoCoOuterOptim::adam) {
    exp_avg_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
    exp_avg_sq_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  } else if (opt_.outer_momentum > 0) {
    momentum_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  }
}

void DiLoCoStrategy::sync(RoundEnd) {
  NoGradGuard no_grad;
  Tensor params = ctx_.arena->params();  // a handle on the arena: θ_i(t)
  // Line 11: δ_i(t) = θ(t−1) − θ_i(t).
  delta_.copy_(theta_);
  add_(delta_, params, -1.f);
  // Line 13: Δ(t) = (1/k) Σ_i δ_i(t), one allreduce (over the live workers while some are down:
  // docs/virtual_cluster.md, "Failures").
  weigh_for_live_average(delta_);
  if (world_size() > 1) meter().allreduce(world(), "outer gradient", delta_, ReduceOp::average);
  // Line 15: θ(t) = OuterOpt(θ(t−1), Δ(t)) on the flat vector.
  if (opt_.outer_optim == DiLoCoOuterOptim::adam) {
    // PyTorch's Adam: AdamW at weight decay 0; t = this outer step, 1-based (rounds() counts
    // the completed ones, restored on resume, so the bias corrections continue).
    AdamWStepArgs a;
    a.lr = opt_.outer_lr;
    a.beta1 = opt_.outer_beta1;
    a.beta2 = opt_.outer_beta2;
    a.eps = opt_.outer_eps;
    a.weight_decay = 0;
    a.step = rounds() + 1;
    backend_for(theta_.device()).optim.adamw_step(theta_, delta_, exp_avg_, exp_avg_sq_, a);
  } else {  // PyTorch's SGD, Nesterov or not
    SgdStepArgs a;
    a.lr = static_cast<float>(opt_.outer_lr);
    a.momentum = static_cast<float>(opt_.outer_momentum);
    a.nesterov = opt_.outer_optim == DiLoCoOuterOptim::nesterov && opt_.outer_momentum > 0;
    a.first_step = rounds() == 0;
    backend_for(theta_.device()).optim.sgd_step(theta_, delta_, momentum_, a);
  }
  // Line 3 of the next round: θ_i(t+1) = θ(t).
  params.copy_(theta_);
}

void DiLoCoStrategy::drain() {
  average_buffers();
}

std::map<std::string, double> DiLoCoStrategy::state() const {
  return {{"H", double(opt_.H)}, {"outer_steps", double(rounds())}};
}

void DiLoCoStrategy::save_sync_state(StateDict& out) const {
  out.put_tensor("theta_global", theta_);
  if (momentum_.defined()) out.put_tensor("outer_momentum", momentum_);
  if (exp_avg_.defined()) {
    out.put_tensor("outer_exp_avg", exp_avg_);
    out.put_tensor("outer_exp_avg_sq", exp_avg_sq_);
  }
}

void DiLoCoStrategy::load_sync_state(const StateDict& in, const RoundPosition&) {
  restore_tensor(in, name(), "theta_global", theta_);
  const bool saved_momentum = in.has("outer_momentum");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(saved_momentum == momentum_.defined(),
              "{}: diloco state {} an outer momentum buffer but diloco.outer_momentum is {}", where,
              saved_momentum ? "has" : "lacks", opt_.outer_momentum);
  if (momentum_.defined()) restore_tensor(in, name(), "outer_momentum", momentum_);
  const bool saved_adam = in.has("outer_exp_avg");
  DPLAB_CHECK(saved_adam == exp_avg_.defined(),
              "{}: diloco state {} outer Adam moments but diloco.outer_optim is {}adam", where,
              saved_adam ? "has" : "lacks", exp_avg_.defined() ? "" : "not ");
  if (exp_avg_.defined()) {
    restore_tensor(in, name(), "outer_exp_avg", exp_avg_);
    restore_tensor(in, name(), "outer_exp_avg_sq", exp_avg_sq_);
  }
}

std::unique_ptr<Strategy> make_diloco_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<DiLoCoStrategy>(std::move(topo), opt);
}

ReshardPolicy diloco_reshard_policy(const CheckpointConfig&) {
  return averaging_policy(
      "the inner replicas' average; theta and the outer optimizer's state (global) rank 0's; "
      "the inner optimizer's state averaged");
}

}  // namespace dplab
