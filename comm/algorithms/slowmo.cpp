#include "dplab/comm/algorithms/slowmo.h"

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

SlowMoOptions SlowMoOptions::from_options(const Options& opt) {
  SlowMoOptions o;
  o.frequency = opt.get_int("slowmo.frequency", 48);
  o.lr = opt.get_double("slowmo.lr", 1.0);
  o.momentum = opt.get_double("slowmo.momentum", 0.5);
  const std::string base = opt.get_string("slowmo.base", "local");
  DPLAB_CHECK(base == "local" || base == "sgp",
              "option slowmo.base: expected local (local SGD) or sgp (stochastic gradient push), "
              "got '{}'",
              base);
  o.sgp_base = base == "sgp";
  DPLAB_CHECK(o.frequency >= 1, "option slowmo.frequency: expected >= 1 base steps, got {}",
              o.frequency);
  DPLAB_CHECK(o.lr >= 0, "option slowmo.lr: expected >= 0, got {}", o.lr);
  DPLAB_CHECK(o.momentum >= 0 && o.momentum < 1,
              "option slowmo.momentum: expected a value in [0, 1), got {}", o.momentum);
  return o;
}

SlowMoStrategy::SlowMoStrategy(const Options& opt)
    : SlowMoStrategy(std::make_shared<Topology>(Topology::from_options(opt)), opt) {}

SlowMoStrategy::SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : topo_(std::move(topo)), opt_(SlowMoOptions::from_options(opt)) {
  if (opt_.sgp_base) sgp_ = std::make_unique<SgpStrategy>(topo_, opt);
}

void SlowMoStrategy::setup(TrainContext& ctx) {
  Strategy::setup(ctx);
  DPLAB_CHECK(ctx.arena != nullptr && ctx.optimizer != nullptr,
              "slowmo: setup needs the parameter arena and the base optimizer (its lr is γ)");
  if (sgp_)
    sgp_->setup(ctx);  // broadcasts rank 0's model, as below
  else
    stats_.add(
        broadcast_model(topo_->world(), *ctx.arena, ctx.buffers, 0, ctx.tracer, ctx.time.get()));
  device_waits_ = DeviceWaits(ctx.arena->device(), topo_->world().virtual_time() != nullptr);
  x_start_ = ctx.arena->params().clone();  // x_{0,0}
  g_ = Tensor::zeros(x_start_.shape(), DType::f32, x_start_.device());
  if (opt_.momentum > 0) u_ = Tensor::zeros(x_start_.shape(), DType::f32, x_start_.device());
}

void SlowMoStrategy::slow_step() {
  NoGradGuard no_grad;
  const double gamma = ctx_.optimizer->lr();
  DPLAB_CHECK(gamma > 0,
              "slowmo: the base learning rate γ is {} at round {}; the slow momentum update "
              "divides by it (use a schedule that stays above 0)",
              gamma, rounds_);
  // Line 7: x_{t,τ}, the exact average, in place in the arena (SGP: the push-sum average, which
  // also resets the push-sum weights to 1).
  Tensor params = ctx_.arena->params();
  if (sgp_)
    sgp_->push_sum_average();
  else
    stats_.add(average_parameters(topo_->world(), *ctx_.arena, ctx_.tracer, &device_waits_,
                                  ctx_.time.get()));
  // Line 8: u_{t+1} = β u_t + g with g = (x_{t,0} − x_{t,τ}) / γ_t; line 9: x_{t+1,0} =
  // x_{t,0} − α γ_t u_{t+1}. The SGD heavy-ball step on x_start with lr α γ does both.
  g_.copy_(x_start_);
  add_(g_, params, -1.f);
  mul_(g_, static_cast<float>(1.0 / gamma));
  SgdStepArgs a;
  a.lr = static_cast<float>(opt_.lr * gamma);
  a.momentum = static_cast<float>(opt_.momentum);
  a.first_step = rounds_ == 0;
  backend_for(x_start_.device()).optim.sgd_step(x_start_, g_, u_, a);
  params.copy_(x_start_);  // every worker starts round t+1 from x_{t+1,0}
  ++rounds_;
  local_steps_ = 0;
}

void SlowMoStrategy::after_backward(const StepInfo& step) {
  if (sgp_) sgp_->after_backward(step);  // SGP's pre-step snapshot (when w != 1)
}

void SlowMoStrategy::after_step(const StepInfo& step) {
  ++local_steps_;
  if (local_steps_ == opt_.frequency || step.last_in_epoch())
    slow_step();  // SGP: the push-sum average replaces this step's gossip
  else if (sgp_)
    sgp_->after_step(step);  // the SGP base step's gossip (or its local-step bookkeeping)
}

void SlowMoStrategy::finish_training() {
  // A run stopped mid-round (max_steps): every rank stops at the same step, so all reach this.
  if (local_steps_ > 0) slow_step();
}

void SlowMoStrategy::drain() {
  stats_.add(average_buffers(topo_->world(), ctx_.buffers, ctx_.tracer, ctx_.time.get()));
}

CommStats SlowMoStrategy::take_stats() {
  CommStats s = stats_;
  device_waits_.take(s);
  stats_ = {};
  if (sgp_) s.add(sgp_->take_stats());
  return s;
}

std::map<std::string, double> SlowMoStrategy::state() const {
  std::map<std::string, double> m = {{"tau", double(opt_.frequency)}, {"rounds", double(rounds_)}};
  if (sgp_) m["push_sum_weight"] = double(sgp_->push_sum_weight());
  return m;
}

void SlowMoStrategy::save_state(StateDict& out) const {
  save_algorithm_name(out, name());
  out.put_int("frequency", opt_.frequency);
  out.put_int("local_steps", local_steps_);
  out.put_int("rounds", rounds_);
  out.put_tensor("x_start", x_start_);
  if (u_.defined()) out.put_tensor("slow_momentum", u_);
  out.put_string("base", opt_.sgp_base ? "sgp" : "local");
  if (sgp_) {
    StateDict base;
    sgp_->save_state(base);
    out.merge("sgp.", base);
  }
}

void SlowMoStrategy::load_state(const StateDict& in) {
  check_algorithm_name(in, name());
  // A round in progress only makes sense with the same τ.
  state_int(in, name(), "frequency", opt_.frequency, opt_.frequency);
  const int64_t local = state_int(in, name(), "local_steps", 0, opt_.frequency - 1);
  const int64_t rounds = state_int(in, name(), "rounds", 0, INT64_MAX);
  restore_tensor(in, name(), "x_start", x_start_);
  const bool saved_u = in.has("slow_momentum");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(saved_u == u_.defined(),
              "{}: slowmo state {} a slow momentum buffer but slowmo.momentum is {}", where,
              saved_u ? "has" : "lacks", opt_.momentum);
  if (u_.defined()) restore_tensor(in, name(), "slow_momentum", u_);
  // Checkpoints from before slowmo.base existed have no "base": local SGD.
  const std::string base = in.has("base") ? in.get_string("base") : std::string("local");
  const std::string want = opt_.sgp_base ? "sgp" : "local";
  DPLAB_CHECK(base == want,
              "{}: slowmo state was saved with slowmo.base = {}, but this run has slowmo.base = "
              "{} (the push-sum weights of an SGP base cannot be made up or dropped)",
              where, base, want);
  if (sgp_) sgp_->load_state(in.sub("sgp."));
  local_steps_ = local;
  rounds_ = rounds;
}

std::unique_ptr<Strategy> make_slowmo_strategy(const Options& opt) {
  return std::make_unique<SlowMoStrategy>(opt);
}

}  // namespace dplab
