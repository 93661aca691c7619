#include "dplab/comm/algorithms/local_sgd.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

void average_parameters(CommMeter& meter, Communicator& comm, ParamArena& arena, float weight) {
  if (comm.size() == 1) return;
  if (weight != 1.f) {
    NoGradGuard no_grad;
    Tensor params = arena.params();  // a handle on the arena
    params.copy_(mul_scalar(params, weight));
  }
  meter.allreduce(comm, "parameter average", arena.params(), ReduceOp::average);
}

namespace {
PeriodicSyncConfig local_sgd_rounds(const Options& opt) {
  const OptionTable& t = local_sgd_option_table();
  const int64_t H = t.get_int(opt, "local_sgd.H");
  return {.period = H,
          .round_spans_epochs = t.get_bool(opt, "local_sgd.round_spans_epochs"),
          .period_key = "H",
          .steps_key = "since_average",
          .rounds_key = "averages",
          .period_option = "local_sgd.H"};
}
}  // namespace

LocalSgdStrategy::LocalSgdStrategy(std::shared_ptr<Topology> topo, const Options& opt,
                                   bool post_local)
    : PeriodicSyncStrategy(std::move(topo), local_sgd_rounds(opt)), post_local_(post_local) {
  if (post_local_) {
    switch_epoch_ = post_local_sgd_option_table().get_int(opt, "post_local_sgd.switch_epoch");
    sync_opt_ = GradSyncOptions::from_options(opt, "allreduce.");
  }
}

void LocalSgdStrategy::setup(TrainContext& ctx) {
  PeriodicSyncStrategy::setup(ctx);  // every rank starts from rank 0's model
  if (post_local_) {
    sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->world_ptr(), sync_opt_, topo_->node_ptr(),
                                       topo_->cross_ptr());
    sync_->set_tracer(ctx.tracer);
  }
}

void LocalSgdStrategy::begin_epoch(int64_t epoch) {
  grad_phase_ = post_local_ && epoch < switch_epoch_;
  // After the switch the grad-ready hooks must not communicate.
  if (sync_) sync_->set_no_sync(!grad_phase_);
}

void LocalSgdStrategy::after_backward(const StepInfo&) {
  if (grad_phase_) sync_->finish();
}

void LocalSgdStrategy::sync(RoundEnd) {
  average_parameters(meter(), world(), *ctx_.arena, live_weight());
}

void LocalSgdStrategy::drain() {
  average_buffers();
}

CommStats LocalSgdStrategy::take_stats() {
  CommStats s = sync_ ? sync_->take_stats() : CommStats{};
  s.add(PeriodicSyncStrategy::take_stats());
  return s;
}

void LocalSgdStrategy::save_sync_state(StateDict& out) const {
  out.put_bool("allreduce_phase", grad_phase_);
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void LocalSgdStrategy::load_sync_state(const StateDict& in, const RoundPosition& at) {
  const bool phase = in.get_bool("allreduce_phase");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(post_local_ || !phase,
              "{}: local_sgd state 'allreduce_phase' is true (only post-local SGD has one)", where);
  DPLAB_CHECK(!phase || at.steps == 0,
              "{}: {} state: 'since_average' = {} during the allreduce phase (expected 0)", where,
              name(), at.steps);
  grad_phase_ = phase;
  if (sync_) sync_->set_no_sync(!grad_phase_);
  if (sync_) sync_->load_state(in.sub("sync."));
}

std::map<std::string, double> LocalSgdStrategy::state() const {
  std::map<std::string, double> s = {
      {"H", double(period())}, {"averages", double(rounds())}, {"phase", grad_phase_ ? 0.0 : 1.0}};
  if (sync_) sync_->add_compression_state(s);
  return s;
}

std::vector<std::string> LocalSgdStrategy::plan_notes(const RunPlan& plan) const {
  if (!post_local_) return PeriodicSyncStrategy::plan_notes(plan);
  std::vector<std::string> v;
  // The epochs the run reaches (max_steps may stop it before `epochs`); the allreduce phase is
  // epochs [0, switch_epoch).
  const int64_t spe = std::max<int64_t>(1, plan.steps_per_epoch);
  const int64_t reached = (plan.steps + spe - 1) / spe;
  const int64_t phase_steps = std::min(plan.steps, switch_epoch_ * spe);
  if (switch_epoch_ >= reached)
    v.push_back(fmt::format(
        "warning: post_local_sgd.switch_epoch = {} but the run plans {} epoch{} ({} steps): the "
        "local SGD phase never starts and the whole run is AllReduce-SGD; set "
        "post_local_sgd.switch_epoch below {}",
        switch_epoch_, reached, reached == 1 ? "" : "s", plan.steps, reached));
  else if (switch_epoch_ == 0)
    v.push_back(fmt::format(
        "post-local SGD: local SGD (H = {}) from the first step (post_local_sgd.switch_epoch = 0)",
        period()));
  else
    v.push_back(fmt::format(
        "post-local SGD: AllReduce-SGD in epochs 1-{}, local SGD (H = {}) from epoch {} "
        "(post_local_sgd.switch_epoch = {})",
        switch_epoch_, period(), switch_epoch_ + 1, switch_epoch_));
  if (phase_steps > 0)
    for (std::string& n : compression_notes(sync_opt_.compress, phase_steps)) v.push_back(n);
  if (switch_epoch_ < reached)
    for (std::string& n : PeriodicSyncStrategy::plan_notes(plan)) v.push_back(n);
  return v;
}

std::unique_ptr<Strategy> make_local_sgd_strategy(std::shared_ptr<Topology> topo,
                                                  const Options& opt) {
  return std::make_unique<LocalSgdStrategy>(std::move(topo), opt, false);
}
std::unique_ptr<Strategy> make_post_local_sgd_strategy(std::shared_ptr<Topology> topo,
                                                       const Options& opt) {
  return std::make_unique<LocalSgdStrategy>(std::move(topo), opt, true);
}

ReshardPolicy local_sgd_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the replicas' average (a round's end, early: the round goes on from it); the "
      "optimizer's state averaged");
  p.rules.algo = {compression_residuals_rule()};
  return p;
}

}  // namespace dplab
