#include "dplab/comm/algorithms/hybrid.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"

namespace dplab {

namespace {

// The iteration before `s` (steps_per_epoch is the same in every epoch).
StepInfo previous_step(const StepInfo& s) {
  StepInfo p = s;
  p.global_step = s.global_step - 1;
  if (s.step_in_epoch > 0) {
    p.step_in_epoch = s.step_in_epoch - 1;
  } else {
    p.epoch = s.epoch - 1;
    p.step_in_epoch = s.steps_per_epoch - 1;
  }
  return p;
}

// Whether the iteration communicates in stage 2 (interval W) or 3 (interval R).
bool on_interval(const HybridConfig& cfg, const StepInfo& s, int64_t interval) {
  if (cfg.counter == HybridCounter::global) return s.global_step % interval == 0;  // code
  return (s.step_in_epoch + 1) % interval == 0;  // Algorithm 4: q = 1, 2, ...; q % W == 0
}

// Stage and sync of one iteration, without the gradient-zeroing rule.
HybridAction stage_action(const HybridConfig& cfg, const StepInfo& s) {
  HybridAction a;
  switch (cfg.mode) {
    case HybridMode::each_iter:
      a.stage = 1;
      return a;
    case HybridMode::only_end:
      a.stage = 3;
      a.sync = false;
      return a;
    case HybridMode::hybrid:
      break;
  }
  a.stage = hybrid_stage(cfg, s.epoch, s.total_epochs);
  if (a.stage == 2) {
    // Algorithm 4 lines 10-15: accumulate, and only on the W-th iteration sync and step.
    a.sync = on_interval(cfg, s, cfg.W);
    a.step = a.sync;
  } else if (a.stage == 3) {
    // Lines 18-24: step every iteration; every R-th on the K-rank average of this gradient.
    a.sync = on_interval(cfg, s, cfg.R);
  }
  return a;
}

}  // namespace

HybridConfig HybridConfig::from_options(const Options& opt) {
  const OptionTable& t = hybrid_option_table();
  HybridConfig c;
  c.mode = t.get_choice<HybridMode>(opt, "hybrid.mode");
  c.W = t.get_int(opt, "hybrid.W");
  c.R = t.get_int(opt, "hybrid.R");
  c.split = t.get_choice<HybridSplit>(opt, "hybrid.split");
  c.counter = t.get_choice<HybridCounter>(opt, "hybrid.counter");
  c.carry_grad = t.get_bool(opt, "hybrid.carry_grad");
  c.final_average = t.get_bool(opt, "hybrid.final_average");
  c.accumulate_mean = t.get_string(opt, "hybrid.accumulate") == "mean";
  return c;
}

int hybrid_stage(const HybridConfig& cfg, int64_t epoch, int64_t total_epochs) {
  DPLAB_CHECK(total_epochs >= 1 && epoch >= 0 && epoch < total_epochs,
              "hybrid: epoch {} outside the budget of {} epochs", epoch, total_epochs);
  if (cfg.split == HybridSplit::ceil) {
    // Thesis code: S = ceil(E/3); `if epoch < S` / `elif S <= epoch <= 2*S` / `else`.
    const int64_t S = (total_epochs + 2) / 3;
    if (epoch < S) return 1;
    if (epoch <= 2 * S) return 2;
    return 3;
  }
  // Algorithm 4 with i = epoch + 1: i <= E/3, E/3 < i <= 2E/3, else (the overlap at i = 2E/3
  // goes to stage 2).
  const int64_t i = epoch + 1;
  if (3 * i <= total_epochs) return 1;
  if (3 * i <= 2 * total_epochs) return 2;
  return 3;
}

HybridAction hybrid_schedule(const HybridConfig& cfg, const StepInfo& s) {
  DPLAB_CHECK(s.steps_per_epoch >= 1 && s.step_in_epoch >= 0 &&
                  s.step_in_epoch < s.steps_per_epoch && s.global_step >= 0,
              "hybrid: bad iteration (epoch {}, step {} of {}, global {})", s.epoch,
              s.step_in_epoch, s.steps_per_epoch, s.global_step);
  HybridAction a = stage_action(cfg, s);
  if (a.stage == 2) {
    // Stage 2 zeroes only after its synced step (code: step(); zero_grad()), which the loop
    // expresses as "zero before the next backward". At the stage 1 -> 2 change the last
    // stage-1 gradient is kept (carry_grad, the code's behaviour) or zeroed.
    if (s.global_step == 0) {
      a.zero_before = true;
    } else {
      const StepInfo p = previous_step(s);
      const HybridAction pa = stage_action(cfg, p);
      a.zero_before = pa.stage == 2 ? pa.sync : !cfg.carry_grad;
    }
  }
  return a;
}

HybridStrategy::HybridStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)),
      cfg_(HybridConfig::from_options(opt)),
      sync_opt_(GradSyncOptions::from_options(opt, "hybrid.")) {
  // Stage 2 averages the accumulated sum over ranks (DDP's division by world size), not by W.
  sync_opt_.average = true;
}

void HybridStrategy::setup(TrainContext& ctx) {
  // Algorithm 4 line 1: initialise theta and synchronise it across the nodes.
  DistributedStrategy::setup(ctx);
  sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->world_ptr(), sync_opt_, topo_->node_ptr(),
                                     topo_->cross_ptr());
  sync_->set_tracer(ctx.tracer);
}

StepPlan HybridStrategy::plan(const StepInfo& step) {
  DPLAB_CHECK(sync_ != nullptr, "hybrid: plan before setup");
  DPLAB_CHECK(!final_done_, "hybrid: iteration {} after the final parameter average",
              step.global_step);
  current_ = hybrid_schedule(cfg_, step);
  stage_ = current_.stage;
  // Hooks fire during the coming backward: no_sync must be set before it (DDP's no_sync()).
  sync_->set_no_sync(!current_.sync);
  StepPlan p;
  p.zero_grad = current_.zero_before;
  p.optimizer_step = current_.step;
  return p;
}

void HybridStrategy::after_backward(const StepInfo&) {
  DPLAB_CHECK(sync_ != nullptr, "hybrid: after_backward before setup");
  if (!current_.sync) return;
  // grad_sync = (1/K) sum_k grad_node_k  (Algorithm 4 lines 6, 12, 20).
  sync_->finish();
  ++syncs_;
  // accumulate = mean: the step uses the mean of the W mini-batch gradients instead of their sum.
  if (current_.stage == 2 && cfg_.accumulate_mean && cfg_.mode == HybridMode::hybrid) {
    Tensor grads = ctx_.arena->grads();
    mul_(grads, 1.0f / static_cast<float>(cfg_.W));
  }
}

void HybridStrategy::drain() {
  // Nothing is in flight between iterations (after_backward waits). While the models are
  // identical (stages 1-2, each_iter, or after the final average) BatchNorm running statistics
  // are averaged like AllReduce-SGD does; while they diverge, each rank keeps its own and rank 0
  // evaluates its own model.
  const bool identical = averaged_ || stage_ != 3;
  if (identical) average_buffers();
}

void HybridStrategy::finish_training() {
  if (final_done_ || sync_ == nullptr) return;
  final_done_ = true;
  if (cfg_.mode == HybridMode::each_iter || !cfg_.final_average) return;
  // Algorithm 4 line 25 / code: all_reduce(p, SUM); p /= K -- once, parameters only (momentum
  // buffers stay local), as one allreduce of the whole arena.
  Pending p =
      meter().iallreduce(world(), "parameter average", ctx_.arena->params(), ReduceOp::average);
  meter().complete_blocking(p, Use::host);
  average_buffers();
  averaged_ = true;
}

CommStats HybridStrategy::take_stats() {
  CommStats s = sync_ ? sync_->take_stats() : CommStats{};
  s.add(DistributedStrategy::take_stats());
  return s;
}

void HybridStrategy::save_algorithm_state(StateDict& out) const {
  DPLAB_CHECK(sync_ != nullptr, "hybrid: save_state before setup");
  out.put_tensor("grad", ctx_.arena->grads());
  out.put_int("stage", stage_);
  out.put_int("syncs", syncs_);
  out.put_bool("final_done", final_done_);
  out.put_bool("final_averaged", averaged_);
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void HybridStrategy::load_algorithm_state(const StateDict& in) {
  DPLAB_CHECK(sync_ != nullptr, "hybrid: load_state before setup");
  const int64_t stage = state_int(in, "hybrid", "stage", 1, 3);
  const int64_t syncs = state_int(in, "hybrid", "syncs", 0, INT64_MAX);
  const bool done = in.get_bool("final_done"), averaged = in.get_bool("final_averaged");
  restore_tensor(in, "hybrid", "grad", ctx_.arena->grads());
  if (sync_) sync_->load_state(in.sub("sync."));
  stage_ = int(stage);
  syncs_ = syncs;
  final_done_ = done;
  averaged_ = averaged;
}

std::map<std::string, double> HybridStrategy::state() const {
  std::map<std::string, double> s = {{"stage", static_cast<double>(stage_)},
                                     {"mode", static_cast<double>(static_cast<int>(cfg_.mode))},
                                     {"W", static_cast<double>(cfg_.W)},
                                     {"R", static_cast<double>(cfg_.R)},
                                     {"syncs", static_cast<double>(syncs_)},
                                     {"final_averaged", averaged_ ? 1.0 : 0.0}};
  if (sync_) sync_->add_compression_state(s);
  return s;
}

std::vector<std::string> HybridStrategy::plan_notes(const RunPlan& plan) const {
  std::vector<std::string> v;
  if (cfg_.mode == HybridMode::hybrid && plan.epochs >= 1) {
    // The epochs each stage covers, within the epochs the run reaches (max_steps may stop it).
    const int64_t spe = std::max<int64_t>(1, plan.steps_per_epoch);
    const int64_t reached = std::min(plan.epochs, (plan.steps + spe - 1) / spe);
    std::string stages;
    int64_t first[4] = {-1, -1, -1, -1}, last[4] = {-1, -1, -1, -1};
    for (int64_t e = 0; e < plan.epochs; ++e) {
      const int st = hybrid_stage(cfg_, e, plan.epochs);
      if (first[st] < 0) first[st] = e;
      last[st] = e;
    }
    for (int st = 1; st <= 3; ++st) {
      if (first[st] < 0) continue;
      stages += fmt::format("{}stage {} in epochs {}-{}", stages.empty() ? "" : ", ", st,
                            first[st] + 1, last[st] + 1);
    }
    v.push_back(fmt::format("hybrid stages (planned from epochs = {}): {}", plan.epochs, stages));
    for (int st = 2; st <= 3; ++st)
      if (first[st] < 0 || first[st] >= reached)
        v.push_back(fmt::format(
            "warning: hybrid stage {} ({}) never starts: the stages split the {} planned "
            "epoch{} ({} reached) by thirds (hybrid.split)",
            st, st == 2 ? "gradient accumulation, hybrid.W" : "local steps, hybrid.R", plan.epochs,
            plan.epochs == 1 ? "" : "s", reached));
  }
  for (std::string& n : compression_notes(sync_opt_.compress, plan.steps)) v.push_back(n);
  return v;
}

std::vector<std::string> HybridStrategy::planned_from_epochs() const {
  if (cfg_.mode != HybridMode::hybrid) return {};
  return {"hybrid's stages (hybrid.mode = hybrid: thirds of the epochs, hybrid.split)"};
}

bool HybridStrategy::consensus_eval(const std::function<void()>& evaluate) {
  // Stage 3 (hybrid, only_end) until the final average: every rank steps on its own gradient.
  if (averaged_ || stage_ != 3 || world_size() < 2) return false;
  evaluate_average(evaluate, false);
  return true;
}

std::unique_ptr<Strategy> make_hybrid_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<HybridStrategy>(std::move(topo), opt);
}

ReshardPolicy hybrid_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the replicas' average; the stage and sync count (global) rank 0's; the gradient "
      "accumulated since the last sync and the optimizer's state averaged");
  p.rules.algo = {{"grad", Combine::mean}, compression_residuals_rule()};
  return p;
}

}  // namespace dplab
