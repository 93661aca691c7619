#include "dplab/comm/algorithms/periodic_sync.h"

#include <fmt/format.h>

#include <cstdint>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/autograd.h"
#include "dplab/core/error.h"

namespace dplab {

PeriodicSyncStrategy::PeriodicSyncStrategy(std::shared_ptr<Topology> topo,
                                           PeriodicSyncConfig config)
    : DistributedStrategy(std::move(topo)), config_(std::move(config)) {
  DPLAB_CHECK(config_.period >= 0, "periodic sync: period {} < 0", config_.period);
  DPLAB_CHECK(!config_.steps_key.empty() && !config_.rounds_key.empty(),
              "periodic sync: the round counters need checkpoint keys");
}

void PeriodicSyncStrategy::after_step(const StepInfo& step) {
  if (!rounds_running()) return;
  ++steps_;
  RoundEnd end = RoundEnd::period;
  bool ends = config_.period > 0 && steps_ == config_.period;
  if (!ends && !config_.round_spans_epochs && step.last_in_epoch()) {
    ends = true;
    end = RoundEnd::epoch;
  }
  inner_step(step, ends);
  if (ends) end_round(end);
}

void PeriodicSyncStrategy::finish_training() {
  if (rounds_running() && steps_ > 0) end_round(RoundEnd::training);
}

void PeriodicSyncStrategy::end_round(RoundEnd end) {
  sync(end);
  ++rounds_;
  steps_ = 0;
}

bool PeriodicSyncStrategy::consensus_eval(const std::function<void()>& evaluate) {
  if (!config_.round_spans_epochs || world_size() < 2) return false;
  evaluate_average(evaluate, false);
  return true;
}

bool PeriodicSyncStrategy::with_run_model(const std::function<void()>& use) {
  const Tensor* global = global_model();
  if (global == nullptr) return consensus_eval(use);
  if (steps_ == 0) return false;  // a round just ended: every rank holds the global model
  DPLAB_CHECK(ctx_.arena != nullptr, "{}: with_run_model before setup", name());
  NoGradGuard no_grad;
  Tensor params = ctx_.arena->params();  // a handle on the arena
  const Tensor own = params.clone();
  params.copy_(*global);
  use();
  params.copy_(own);
  return true;
}

std::vector<std::string> PeriodicSyncStrategy::plan_notes(const RunPlan& plan) const {
  if (!config_.round_spans_epochs || config_.period <= plan.steps) return {};
  const std::string key = config_.period_option.empty() ? name() + ".H" : config_.period_option;
  return {fmt::format(
      "warning: {} = {} is longer than the run's {} planned step{} and rounds span epochs "
      "({}.round_spans_epochs = true): no round ends before the end of training, whose sync is "
      "the only one; set {} to at most {}",
      key, config_.period, plan.steps, plan.steps == 1 ? "" : "s", key.substr(0, key.rfind('.')),
      key, plan.steps)};
}

void PeriodicSyncStrategy::save_algorithm_state(StateDict& out) const {
  if (!config_.period_key.empty()) out.put_int(config_.period_key, config_.period);
  out.put_int(config_.steps_key, steps_);
  out.put_int(config_.rounds_key, rounds_);
  save_sync_state(out);
}

void PeriodicSyncStrategy::load_algorithm_state(const StateDict& in) {
  // A round in progress only makes sense with the same period.
  if (!config_.period_key.empty())
    state_int(in, name(), config_.period_key, config_.period, config_.period);
  RoundPosition at;
  at.steps = state_int(in, name(), config_.steps_key, 0,
                       config_.period > 0 ? config_.period - 1 : INT64_MAX);
  at.rounds = state_int(in, name(), config_.rounds_key, 0, INT64_MAX);
  load_sync_state(in, at);
  steps_ = at.steps;
  rounds_ = at.rounds;
}

}  // namespace dplab
