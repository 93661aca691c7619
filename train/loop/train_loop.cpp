// The step and the epoch of the training loop (train_loop.h); checkpoints and stops are in
// train_loop_stops.cpp.
#include "dplab/train/loop/train_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/report/epoch_loss.h"
#include "dplab/train/report/run_trace.h"
#include "dplab/train/state/model_file.h"
#include "dplab/train/virtual/liveness.h"
#include "dplab/train/virtual/virtual_run.h"

namespace dplab {

TrainLoop::TrainLoop(const LoopSettings& settings, LoopParts parts, LoopWatch watch,
                     RunReporting& reporting, const RankGroup& ranks, const RunIdentity& run,
                     LoopState start)
    : s_(settings),
      p_(parts),
      w_(watch),
      rep_(reporting),
      ranks_(ranks),
      run_(run),
      saved_{&parts.model, &parts.optimizer, &parts.strategy, &parts.schedule, parts.scaler},
      loop_(std::move(start)),
      steps_per_epoch_(parts.pipeline.steps_per_epoch()),
      rank0_(ranks.rank() == 0),
      step_metrics_(settings.device) {
  result_.is_rank0 = rank0_;
  check_ = resolve_nonfinite_check(s_.nonfinite_check, s_.device.is_cuda(), p_.scaler != nullptr);
  stop_ = s_.max_steps > 0 && loop_.optimizer_steps >= s_.max_steps;
  last_epoch_number_ = loop_.epoch;
  // The step's forward, loss and backward (forward_backward.h): the loss weighed as backward
  // takes it: 1/accumulation, a failure's weight (check_liveness), the f16 loss scale.
  step_loss_.amp = s_.amp_dtype;
  step_loss_.label_smoothing = s_.label_smoothing;
  step_loss_.weigh = [this](const Tensor& loss) {
    Tensor scaled = p_.accumulation.scale(loss);
    if (loss_weight_ != 1.f) scaled = mul_scalar(scaled, loss_weight_);
    return p_.scaler ? p_.scaler->scale_loss(scaled) : scaled;
  };
  // Observers of the phases, the virtual cluster first (a phase's end moves its clock before a
  // span reads it).
  phases_.add(w_.cluster);
  phases_.add(&trace_spans_);
  phases_.add(&slowdown_timer_);
  phases_.add(&prefetch_);                              // after the backward span has ended
  if (loop_.failures && models_failures(w_.cluster)) {  // a resumed run with fail events
    lost_rank_s_ = loop_.failure_lost_rank_s;
    recovery_s_ = loop_.recovery_s;
    last_step_world_s_ = loop_.last_step_world_s;
    std::vector<int> down;
    for (int64_t r : loop_.down) {
      DPLAB_CHECK(r < ranks_.size(), "the checkpoint has rank {} down, the run has {} ranks", r,
                  ranks_.size());
      down.push_back(int(r));
    }
    if (!down.empty()) set_down(down);
  }
}

TrainResult TrainLoop::run() {
  while (step()) {
  }
  return result_;
}

bool TrainLoop::step() {
  while (!finished_) {
    if (!epoch_) {
      if (loop_.epoch >= s_.epochs || stop_) {
        result_ = finish();
        finished_ = true;
        return false;
      }
      begin_epoch();
    }
    const Tick t = tick();
    // The epoch's last batch ends it at once (without asking the loader for another), so that
    // after step() an epoch's evaluation and records are done.
    if (t != Tick::trained || loop_.step_in_epoch >= steps_per_epoch_) {
      end_epoch(*epoch_);
      epoch_.reset();
      step_trace_.reset();
    }
    if (t != Tick::no_batch) return true;
  }
  return false;
}

StepInfo TrainLoop::step_info(int64_t epoch) const {
  StepInfo step;
  step.epoch = epoch;
  step.step_in_epoch = loop_.step_in_epoch;
  step.global_step = loop_.global_step;
  step.steps_per_epoch = steps_per_epoch_;
  step.total_epochs = s_.epochs;
  return step;
}

void TrainLoop::begin_epoch() {
  EpochTally& tally = epoch_.emplace();
  tally.epoch = loop_.epoch;
  p_.pipeline.start_epoch(tally.epoch, loop_.step_in_epoch, p_.tracer,
                          loop_.global_step - loop_.step_in_epoch);
  p_.strategy.begin_epoch(tally.epoch);
  rep_.progress().begin_epoch(tally.epoch, s_.epochs, steps_per_epoch_, loop_.step_in_epoch);
  if (w_.cluster) w_.cluster->begin_epoch();
  // Communication since the last epoch's iterations (set-up, drain, evaluation) is no epoch's.
  rep_.comm_tally().set_aside(p_.strategy);
  tally.start = rep_.clock().now();
  tally.usage_start = thread_usage_now();
  rep_.step_log().begin_epoch(loop_);
  tally.slept_before = w_.slowdown.total_slept_s();
  tally.trace = &step_trace_.emplace(p_.tracer);  // step and data_wait events
  // Under a cluster the batch arrives when cluster.data_rate says (virtual time), inside the
  // data wait.
  if (w_.cluster)
    arrived_ = [v = w_.cluster](const Batch& a) { v->batch_arrived(a.labels.numel()); };
}

TrainLoop::Tick TrainLoop::tick() {
  EpochTally& tally = *epoch_;
  Batch b;
  if (!step_trace_->next(p_.pipeline.batches(), b, loop_.global_step, arrived_))
    return Tick::no_batch;
  rep_.step_log().batch_ready();
  check_liveness();  // a modelled failure of a virtual cluster stops here
  // The tick's work is compute (train_step, skip_tick), at this step's factor.
  phases_.step_begin(loop_.global_step);
  const StepInfo step = step_info(tally.epoch);
  p_.optimizer.set_lr(s_.base_lr * p_.schedule.factor(loop_.global_step, steps_per_epoch_));
  const StepPlan plan = p_.strategy.plan(step);
  DPLAB_CHECK_OPTION(!(plan.strategy_update && s_.nonfinite == NonfinitePolicy::skip),
                     "option nonfinite = skip: algorithm '{}' applies its update inside "
                     "after_backward, before the check, so a step cannot be dropped; use "
                     "nonfinite = stop",
                     p_.strategy.name());
  const bool epoch_ends =
      plan.compute ? train_step(step, plan, step_batch(b), tally) : skip_tick(step, tally);
  return epoch_ends ? Tick::epoch_ends : Tick::trained;
}

Batch TrainLoop::step_batch(const Batch& b) {
  if (down_.empty() || down_here_ || !w_.cluster ||
      w_.cluster->failure_data() != FailureData::reassign)
    return b;
  w_.cluster->pause();  // building the batch is loading, not compute
  std::vector<std::vector<int64_t>> down_batches;
  for (int r : down_) down_batches.push_back(p_.pipeline.batch_indices(r, b.number));
  const int me = ranks_.rank();
  const int live_index =
      me - int(std::count_if(down_.begin(), down_.end(), [me](int r) { return r < me; }));
  const int live_count = ranks_.size() - int(down_.size());
  std::vector<int64_t> indices = p_.pipeline.batch_indices(me, b.number);
  DPLAB_CHECK(int64_t(indices.size()) == b.labels.numel(),
              "rank {}: batch {} has {} samples, its shard says {}", me, b.number, b.labels.numel(),
              indices.size());
  const std::vector<int64_t> taken = reassigned_samples(down_batches, live_index, live_count);
  indices.insert(indices.end(), taken.begin(), taken.end());
  Batch out = p_.pipeline.make_batch(indices, b.number);
  w_.cluster->resume();
  w_.cluster->set_batch_share(double(indices.size()) / double(b.labels.numel()));
  return out;
}

bool TrainLoop::skip_tick(const StepInfo& step, EpochTally& tally) {
  if (w_.cluster) w_.cluster->pause();
  // The others may be computing: same tick sequence (with a check posted last tick, its verdict).
  const Verdict v = check_ == NonfiniteCheck::next_step ? take_posted_check() : Verdict{};
  tick_check(step, v.nonfinite, v.found);
  if (w_.cluster) w_.cluster->resume();
  p_.strategy.after_step(step);
  if (w_.cluster) w_.cluster->pause();                    // the records below are not compute
  tally.trace->end(tally.epoch, 0, traced_live_ranks());  // no images, no computed step
  ++skipped_steps_;
  ++loop_.step_in_epoch;
  ++loop_.global_step;
  rep_.step_log().step_done(loop_, 0, p_.strategy.applied_lr(p_.optimizer.lr()), step_metrics_,
                            p_.strategy, rep_.comm_tally());
  return after_tick();
}

bool TrainLoop::train_step(const StepInfo& step, const StepPlan& plan, const Batch& b,
                           EpochTally& tally) {
  // comm/strategy.h's protocol; the phases' observers (step_phases.h) time and trace compute.
  if (plan.zero_grad && p_.accumulation.first(loop_.global_step)) p_.optimizer.zero_grad();
  p_.strategy.before_forward(step);
  const ForwardLoss fl = forward_backward(p_.model, b.images, b.labels, step_loss_, &phases_);
  const Tensor& loss = fl.loss;
  const Tensor& logits = fl.logits;
  p_.strategy.after_backward(step);
  // The (averaged) gradients and the loss checked; the ranks agree on it kLag ticks later.
  // nonfinite_check = next_step: this step's check is posted and the previous one's verdict
  // read; on a GPU the host waits, if at all, until the device has finished the previous step's
  // backward, with this step's forward and backward already queued behind it.
  phases_.begin(StepPhase::check);
  bool tick_nonfinite = false;
  Verdict verdict;
  if (check_ == NonfiniteCheck::next_step) {
    verdict = take_posted_check();
    w_.guard.post_check(loss, p_.accumulation.first(step.global_step));
    // A copy of the labels: the batch's device slot is refilled before the verdict is read
    // (train/data/device_prefetch.h); a few bytes on the device, read only on the failure path.
    // The logits detached: the step's autograd graph (and its activations) is not kept.
    const bool group_ends = plan.optimizer_step && p_.accumulation.last(step.global_step);
    posted_ = PostedCheck{step.global_step, b.labels.clone(), logits.detach(), group_ends};
  } else {
    tick_nonfinite = w_.guard.step_nonfinite(loss);
    if (tick_nonfinite) check_targets_of_nonfinite_step(b.labels, logits);  // CUDA: a NaN loss
    verdict = {tick_nonfinite, tick_nonfinite ? w_.guard.describe(loss) : std::string()};
  }
  phases_.end(StepPhase::check);
  tick_check(step, verdict.nonfinite, verdict.found);
  phases_.begin(StepPhase::optimizer);
  const bool stepped =
      (plan.optimizer_step && p_.accumulation.last(loop_.global_step)) || plan.strategy_update;
  apply_update(plan);
  phases_.end(StepPhase::optimizer, stepped);
  p_.strategy.after_step(step);
  phases_.step_end();  // the records, progress and checkpoints are not compute
  tally.trace->end(tally.epoch, b.labels.numel(), traced_live_ranks());
  ++tally.computed;

  // A down rank's step counts nowhere (docs/virtual_cluster.md): its batch is seen by the live
  // ranks (cluster.failure_data = reassign: `b` holds their share) or by no one (drop).
  const int64_t n = down_here_ ? 0 : b.labels.numel();
  if (!tick_nonfinite && !down_here_)  // a dropped step's loss is not part of the epoch's mean
    step_metrics_.add(loss, logits, b.labels,
                      drops_on_device() ? w_.guard.metric_flags() : Tensor(), epoch_sums());
  ++loop_.step_in_epoch;
  ++loop_.global_step;
  tally.images += n;
  rep_.step_log().step_done(loop_, n, p_.strategy.applied_lr(p_.optimizer.lr()), step_metrics_,
                            p_.strategy, rep_.comm_tally());
  const double elapsed = rep_.clock().since(tally.start);  // the rate shown is on the time base
  Progress& progress = rep_.progress();
  if (step_metrics_.pending() && progress.will_draw(loop_.step_in_epoch))
    step_metrics_.flush(epoch_sums());
  progress.update(loop_.step_in_epoch, loop_.epoch_loss_sum / double(loop_.epoch_seen),
                  elapsed > 0 ? double(tally.images) / elapsed : 0.0);
  return after_tick();
}

// The optimizer's part of a tick: the step at the end of an accumulation group, or nothing,
// or the algorithm's own update (applied in after_backward).
void TrainLoop::apply_update(const StepPlan& plan) {
  const bool group_ends = plan.optimizer_step && p_.accumulation.last(loop_.global_step);
  if (group_ends && drop_step_) {
    p_.optimizer.zero_grad();  // nonfinite = skip: no update; no later step sees these
    drop_step_ = false;
    ++loop_.epoch_nonfinite_skipped;
    ++loop_.nonfinite_skipped;
    ++loop_.optimizer_steps;  // counts toward max_steps, as a loss scaler's skipped step
  } else if (group_ends) {
    if (p_.scaler) {  // skips the step when a gradient is inf/NaN, then adjusts the scale
      p_.scaler->step(p_.optimizer);
      p_.scaler->update();
    } else if (drops_on_device()) {  // the device drops it when the step's check failed
      p_.optimizer.step_unless(w_.guard.skip_flags());
    } else {
      p_.optimizer.step();
    }
    ++loop_.optimizer_steps;
  } else if (plan.strategy_update) {
    DPLAB_CHECK(!p_.scaler,
                "amp = f16: algorithm '{}' applies its own update, which does not unscale "
                "gradients; use amp = bf16 or off",
                p_.strategy.name());
    ++loop_.optimizer_steps;
  }
}

bool TrainLoop::after_tick() {
  if (s_.max_steps > 0 && loop_.optimizer_steps + skipped_steps_ >= s_.max_steps) {
    stop_ = true;
    return true;
  }
  step_checkpoint();
  return preempted_;  // this step is done on every rank
}

void TrainLoop::end_epoch(const EpochTally& tally) {
  // The epoch's steps are over: communication that completes from here on (the algorithm's
  // end_epoch, the drain, finish_training, evaluation) is outside the epoch in the records
  // (the final record's comm_outside_epochs_*) and outside the steps in the trace (no
  // args.step), one attribution for both (docs/trace_summary.md).
  if (p_.tracer) p_.tracer->between_steps();
  act_on(w_.agreement.flush());  // every tick so far agreed on (stop, pre-emption)
  flush_posted_check();          // and the epoch's last check, when it is read a step later
  step_metrics_.flush(epoch_sums());
  const RunClock::Mark epoch_time = rep_.clock().now() - tally.start;
  // The same window as epoch_time: the drain below and the evaluation are set aside.
  const CommStats epoch_comm = rep_.comm_tally().epoch(p_.strategy);
  rep_.progress().end_epoch();

  const bool epoch_done = loop_.step_in_epoch >= steps_per_epoch_;
  // Pre-empted in the middle of an epoch (and not at the end of training): checkpoint at
  // once, without finish_training() or an evaluation: the grace period is short.
  if (preempted_ && !stop_ && !epoch_done) preempt_exit();
  const double mean_loss = loop_.epoch_seen ? loop_.epoch_loss_sum / double(loop_.epoch_seen) : 0;
  const int64_t nonfinite_skipped = loop_.epoch_nonfinite_skipped;  // for the record
  const RankEpoch mine{tally.images,
                       loop_.epoch_seen,
                       loop_.epoch_loss_sum,
                       loop_.epoch_correct,
                       epoch_time.t,
                       epoch_time.wall,
                       thread_usage_now() - tally.usage_start};
  if (epoch_done) {
    p_.strategy.end_epoch(tally.epoch, mean_loss);
    // The world's loss, so every rank's reduce-on-plateau cuts in the same epoch.
    observe_epoch_loss(p_.schedule, ranks_, loop_.epoch_loss_sum, loop_.epoch_seen);
    loop_.epoch_losses.push_back(mean_loss);
    ++loop_.epoch;
    loop_.step_in_epoch = 0;
    loop_.epoch_loss_sum = 0;
    loop_.epoch_correct = 0;
    loop_.epoch_seen = 0;
    loop_.epoch_nonfinite_skipped = 0;
    result_.epochs_done = loop_.epoch;
  }
  const bool last = stop_ || (epoch_done && tally.epoch + 1 == s_.epochs);
  // The end's checkpoint holds the state before finish_training, so a resumed run that trains
  // further continues exactly as an uninterrupted longer run; a stop in the middle of an epoch
  // is saved before the drain (an uninterrupted run does not drain there).
  const bool save =
      last ||
      (epoch_done && s_.checkpoint_every_epochs > 0 &&
       loop_.epoch % s_.checkpoint_every_epochs == 0) ||
      (s_.checkpoint_every_steps > 0 && loop_.global_step % s_.checkpoint_every_steps == 0);
  if (save && !epoch_done) checkpoint();
  p_.strategy.drain();  // nothing in flight before evaluation (and epoch-end checkpoints)
  if (save && epoch_done) checkpoint();
  // End of training: an algorithm whose ranks diverge builds its final model here, once.
  if (last) {
    p_.strategy.finish_training();
    p_.strategy.drain();
  }
  evaluate_and_record(tally, mine, epoch_comm, epoch_done, nonfinite_skipped);
  // Pre-empted at the last step of an epoch: the epoch ended as usual (checkpoint policy,
  // evaluation, record); the pre-emption checkpoint is this step's (written now if the policy
  // did not).
  if (preempted_ && !stop_ && loop_.epoch < s_.epochs) preempt_exit();
}

void TrainLoop::evaluate_and_record(const EpochTally& tally, const RankEpoch& mine,
                                    const CommStats& comm, bool complete,
                                    int64_t nonfinite_skipped) {
  trace::Span eval_span(p_.tracer, "eval", "compute");
  eval_span.without_step();
  eval_span.arg("epoch", double(tally.epoch + 1));
  EpochFacts ef;
  evaluate_models(ef.ev, ef.ev_rank0, ef.rank0_separate);
  eval_span.end();
  evaluated_ = true;
  last_epoch_number_ = tally.epoch + 1;
  ef.epoch = tally.epoch + 1;
  ef.epochs = s_.epochs;
  ef.complete = complete;
  ef.step = loop_.global_step;
  ef.mine = mine;
  ef.computed_steps = tally.computed;
  ef.lr = p_.strategy.applied_lr(p_.optimizer.lr());  // DC-S3GD: its own schedule's
  ef.comm = comm;
  ef.algo_state = p_.strategy.state();
  ef.nonfinite_skipped = nonfinite_skipped;
  ef.slowdown = w_.slowdown.factor();
  ef.slowdown_sleep_s = w_.slowdown.total_slept_s() - tally.slept_before;
  // Collective: loss, accuracy and images/s over every rank (the records' and the result's).
  const GlobalEpoch global = rep_.report().epoch(ef, rep_.summary());
  result_.train_loss = global.loss();
  result_.train_acc = global.train_acc();
}

void TrainLoop::evaluate_models(EvalResult& run_model, EvalResult& rank0, bool& separate) {
  // Rank 0's own model (every rank evaluates rank 0's: train/data/evaluate.h), then the run's
  // model where it is another one (the global model, or the ranks' average; collective).
  rank0 = evaluate(p_.model, p_.data.test, p_.eval);
  separate =
      p_.strategy.with_run_model([&] { run_model = evaluate(p_.model, p_.data.test, p_.eval); });
  if (!separate) run_model = rank0;
  result_.test_acc = run_model.accuracy;
  result_.test_loss = run_model.loss;
  result_.test_acc5 = run_model.top5 ? run_model.accuracy5 : -1;
  result_.test_acc_rank0 = rank0.accuracy;
  result_.test_loss_rank0 = rank0.loss;
  result_.test_acc5_rank0 = rank0.top5 ? rank0.accuracy5 : -1;
}

TrainResult TrainLoop::finish() {
  if (!evaluated_) {  // resumed from a finished run: its checkpoint, then its final model
    checkpoint();
    p_.strategy.finish_training();
  }
  p_.strategy.drain();
  if (!evaluated_) {  // resumed from a finished run: report its models
    EvalResult run_model, rank0;
    bool separate = false;
    evaluate_models(run_model, rank0, separate);
  }
  result_.epochs_done = loop_.epoch;
  result_.global_step = loop_.global_step;
  result_.images_per_s = rep_.report().total_images_per_s();
  result_.nonfinite_skipped_steps = loop_.nonfinite_skipped;
  // The final model with PyTorch names, for eval and PyTorch: the run's model (the test_acc
  // of the final record; rank 0's own where every rank holds it); checked for inf/NaN on every
  // rank first (finish_training may have changed it).
  if (!s_.out_dir.empty()) {
    check_state_finite("final.safetensors");
    const auto path = std::filesystem::path(s_.out_dir) / "final.safetensors";
    auto write = [&] {
      if (rank0_)
        export_model(path, p_.model, s_.model_name, loop_, dataset_class_names(*p_.data.train));
    };
    if (!p_.strategy.with_run_model(write)) write();  // collective
    if (rank0_) result_.final_checkpoint = path.string();
  }
  rep_.comm_tally().set_aside(p_.strategy);  // the last drain and evaluation, finish_training
  FinalFacts ff;
  ff.comm_outside = rep_.comm_tally().outside();
  ff.epoch = last_epoch_number_;
  ff.epochs_completed = loop_.epoch;
  ff.step = loop_.global_step;
  ff.test_loss = result_.test_loss;
  ff.test_acc = result_.test_acc;
  ff.test_acc5 = result_.test_acc5;
  ff.test_loss_rank0 = result_.test_loss_rank0;
  ff.test_acc_rank0 = result_.test_acc_rank0;
  ff.test_acc5_rank0 = result_.test_acc5_rank0;
  ff.nonfinite_skipped = loop_.nonfinite_skipped;
  if (models_failures(w_.cluster) && p_.strategy.continues_after_failure()) {
    // The last step's down ranks, to the end of training (collective).
    const double end = w_.agreement.max_over_ranks(w_.cluster->shared_virtual_time()->clock.now());
    if (last_step_world_s_ >= 0) lost_rank_s_ += double(down_.size()) * (end - last_step_world_s_);
    ff.failures = true;
    ff.failure_lost_rank_s = lost_rank_s_;
    ff.recovery_s = recovery_s_;
    failures_ = {true, lost_rank_s_, recovery_s_};  // run.json and the summary (trainer.cpp)
  }
  rep_.report().final(ff);
  finish_run_trace(p_.tracer, ranks_, s_.out_dir);  // OUT/trace.json (rank 0), after every file
  return result_;
}

}  // namespace dplab
