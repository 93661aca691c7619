// The training loop of one rank: epochs of steps at the Strategy's call points
// (comm/strategy.h), the checkpoint policy, evaluation and records at each epoch's end, and the
// ways a run stops on purpose (non-finite values, pre-emption, a modelled rank failure).
// run_training builds its parts from the options (train/loop/trainer.cpp); an experiment that
// builds them itself can run the same loop.
//
//   step:   plan -> zero_grad -> before_forward -> forward -> loss -> backward
//           -> after_backward -> non-finite check (agreed kLag ticks later) -> optimizer
//           -> after_step -> metrics, progress, mid-epoch checkpoint
//   epoch:  drain -> checkpoint policy -> finish_training (last) -> evaluation -> records
//
// train_loop.cpp holds the step and the epoch; train_loop_stops.cpp the checkpoints and the
// stops, which must act at the same tick on every rank (train/loop/step_agreement.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/slowdown.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/dtype.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/data/dataset.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/data/data_pipeline.h"
#include "dplab/train/data/evaluate.h"
#include "dplab/train/loop/accumulation.h"
#include "dplab/train/loop/forward_backward.h"
#include "dplab/train/loop/nonfinite_guard.h"
#include "dplab/train/loop/preemption.h"
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/loop/step_agreement.h"
#include "dplab/train/loop/step_observers.h"
#include "dplab/train/loop/step_phases.h"
#include "dplab/train/loop/trainer.h"
#include "dplab/train/report/run_reporting.h"
#include "dplab/train/report/run_trace.h"
#include "dplab/train/report/step_metrics.h"
#include "dplab/train/report/thread_usage.h"
#include "dplab/train/state/checkpoint.h"
#include "dplab/train/virtual/liveness.h"
#include "dplab/train/virtual/run_clock.h"

namespace dplab {

class VirtualRun;

// The loop's own settings (options epochs, max_steps, checkpoint.*, label_smoothing, amp,
// nonfinite, lr).
struct LoopSettings {
  int64_t epochs = 1;
  int64_t max_steps = 0;  // optimizer steps, skipped ticks included (0: no limit)
  int64_t checkpoint_every_epochs = 0;
  int64_t checkpoint_every_steps = 0;
  int64_t checkpoint_keep = 0;
  std::string out_dir;     // empty: no checkpoints and no final.safetensors
  std::string model_name;  // recorded in final.safetensors
  float label_smoothing = 0;
  DType amp_dtype = DType::f32;  // autocast in the forward pass (amp = bf16 | f16)
  NonfinitePolicy nonfinite = NonfinitePolicy::stop;
  std::string nonfinite_check = "auto";  // option nonfinite_check (NonfiniteCheck)
  double base_lr = 0;                    // the schedule multiplies it
  Device device = Device::cpu();         // the model's: where the loss and accuracy sums are kept
};

// What the loop runs on. Borrowed: the caller owns every part and keeps it alive.
struct LoopParts {
  Module& model;
  Optimizer& optimizer;
  GradScaler* scaler;  // amp = f16 only, else null
  Strategy& strategy;
  LrSchedule& schedule;
  const GradAccumulation& accumulation;
  DataPipeline& pipeline;
  const TrainData& data;
  EvalOptions eval;
  trace::Tracer* tracer;  // null: no timeline
};

// What watches the run: the ranks' agreement on stops, this rank's non-finite check, its
// --slowdown and its pre-emption signals; under a virtual cluster, what is compute
// (train/virtual/virtual_run.h; null without a cluster).
struct LoopWatch {
  StepAgreement& agreement;
  NonfiniteGuard& guard;
  Slowdown& slowdown;
  PreemptionSignals& preemption;
  VirtualRun* cluster = nullptr;
};

class TrainLoop {
 public:
  // `start`: the loop state to continue from (a fresh LoopState, or a resumed one); `run` is
  // what the checkpoints record; `reporting` writes the records and the progress.
  TrainLoop(const LoopSettings& settings, LoopParts parts, LoopWatch watch, RunReporting& reporting,
            const RankGroup& ranks, const RunIdentity& run, LoopState start);
  TrainLoop(const TrainLoop&) = delete;
  TrainLoop& operator=(const TrainLoop&) = delete;

  // Trains to the end (epochs or max_steps), then evaluates and writes the final model:
  // step() until it returns false. Throws RunStopped (train/loop/run_stopped.h) on every rank
  // for a stop on purpose.
  TrainResult run();
  // One tick (a computed or, where the algorithm plans so, a skipped step) and, when the tick
  // ends its epoch, the epoch's end (drain, checkpoint policy, evaluation, records). Returns
  // false, having trained nothing, once training is over: the first such call finishes the run
  // (the final evaluation and final.safetensors) and result() is then final. Collective: every
  // rank calls it the same number of times.
  bool step();
  bool finished() const { return finished_; }
  // The figures so far; final once step() has returned false.
  const TrainResult& result() const { return result_; }
  const LoopState& state() const { return loop_; }
  // After run(): a run with fail events that went on with the live ranks (train/virtual/liveness.h)
  // has `any` and the final record's failure_lost_rank_s (virtual seconds summed over the down
  // ranks: rank-seconds) and recovery_s (the heals' virtual seconds).
  struct Failures {
    bool any = false;
    double lost_rank_s = 0, recovery_s = 0;
  };
  const Failures& failures() const { return failures_; }

 private:
  // One epoch's own figures (its record's "mine").
  struct EpochTally {
    int64_t epoch = 0;
    RunClock::Mark start;  // on the run's time base (train/virtual/run_clock.h)
    int64_t images = 0;    // this rank's images in computed steps
    int64_t computed = 0;  // steps this rank computed
    double slept_before = 0;
    ThreadUsage usage_start;     // the training thread's kernel counts at the start
    StepTrace* trace = nullptr;  // the epoch's step and data_wait events
  };
  // train_loop.cpp
  void begin_epoch();
  // The epoch's next tick: trained (computed or skipped), trained and the epoch ends there (a
  // stop, a pre-emption, its last batch), or no batch left.
  enum class Tick { trained, epoch_ends, no_batch };
  Tick tick();
  StepInfo step_info(int64_t epoch) const;
  // A tick this rank skips (StepPlan::compute false); returns whether the epoch ends here.
  bool skip_tick(const StepInfo& step, EpochTally& tally);
  // The batch a computed tick trains on: `b`, or while ranks are down under
  // cluster.failure_data = reassign, this live rank's own samples followed by its share of the
  // down ranks' (train/virtual/failure_data.h), built from the dataset as their loaders would.
  Batch step_batch(const Batch& b);
  // A computed tick; returns whether the epoch ends here.
  bool train_step(const StepInfo& step, const StepPlan& plan, const Batch& b, EpochTally& tally);
  void apply_update(const StepPlan& plan);
  // After a tick (computed or skipped): whether max_steps is reached (stop_ is set), else the
  // mid-epoch checkpoint; returns whether the epoch's loop ends.
  bool after_tick();
  void end_epoch(const EpochTally& tally);
  // Evaluates rank 0's own model and the run's model (Strategy::with_run_model; the same
  // evaluation where they are one model) into result_. Collective.
  void evaluate_models(EvalResult& run_model, EvalResult& rank0, bool& separate);
  void evaluate_and_record(const EpochTally& tally, const RankEpoch& mine, const CommStats& comm,
                           bool complete, int64_t nonfinite_skipped);
  TrainResult finish();

  // train_loop_stops.cpp
  void act_on(const std::vector<Agreement>& due);
  // `found`: what this rank found non-finite ("" when local_nonfinite is false).
  void tick_check(const StepInfo& step, bool local_nonfinite, const std::string& found);
  // nonfinite_check = next_step: the verdict of the check posted at the previous tick, taken
  // now (the labels of a step whose loss is NaN are checked: a bad label is named, as at once).
  struct Verdict {
    bool nonfinite = false;
    std::string found;
  };
  Verdict take_posted_check();
  // At a flush point (an epoch's end, a checkpoint): the last posted check, voted on by every
  // rank outside the tick sequence (StepAgreement::agree); stops the run if some rank's failed.
  void flush_posted_check();
  [[noreturn]] void stop_nonfinite(const std::string& what, const Agreement& agreed);
  void check_state_finite(const std::string& name);
  std::filesystem::path checkpoint();
  void step_checkpoint();
  [[noreturn]] void preempt_exit();
  // Fail events of a virtual cluster (train/virtual/liveness.h), before a step begins.
  void check_liveness();
  [[noreturn]] void stop_failed(const StepLiveness& live);
  // `down` are the ranks down from the step about to begin: told to the strategy, the virtual
  // cluster and this rank's loss weight.
  void set_down(const std::vector<int>& down);
  // The step event's live-rank count: the live ranks under fail events, 0 (none) otherwise.
  int traced_live_ranks() const {
    return models_failures(w_.cluster) ? ranks_.size() - int(down_.size()) : 0;
  }

  const LoopSettings& s_;
  LoopParts p_;
  LoopWatch w_;
  RunReporting& rep_;
  const RankGroup& ranks_;
  const RunIdentity& run_;
  TrainingParts saved_;  // what a checkpoint holds
  LoopState loop_;
  const int64_t steps_per_epoch_;
  const bool rank0_;
  StepMetrics step_metrics_;  // loss and accuracy sums, read back once per log line
  TrainResult result_;
  // The epoch under way (step() between its begin_epoch and end_epoch), its step and data_wait
  // events, and what runs when its batch arrives (a virtual cluster's loader delay).
  std::optional<EpochTally> epoch_;
  std::optional<StepTrace> step_trace_;
  std::function<void(const Batch&)> arrived_;
  bool finished_ = false;
  bool stop_ = false;
  int64_t skipped_steps_ = 0;  // StepPlan::compute == false ticks (count toward max_steps)
  bool evaluated_ = false;
  int64_t last_epoch_number_ = 0;  // 1-based number of the last epoch trained
  // nonfinite = skip: the optimizer step in progress is dropped (set at the tick whose check
  // failed, applied at the tick that would step: accumulated micro-batches are dropped whole).
  bool drop_step_ = false;
  // Option nonfinite_check, resolved (train/loop/nonfinite_guard.h), and under next_step the step
  // whose check is posted and not yet read, with what its bad-label check needs.
  NonfiniteCheck check_ = NonfiniteCheck::every_step;
  struct PostedCheck {
    int64_t global_step = 0;
    Tensor labels, logits;
    bool group_end = false;  // the step's optimizer update ends an accumulation group
  };
  // nonfinite = skip with nonfinite_check = next_step: the device drops a failed step's update
  // and leaves it out of the metrics; take_posted_check() counts it when its verdict arrives.
  bool drops_on_device() const {
    return check_ == NonfiniteCheck::next_step && s_.nonfinite == NonfinitePolicy::skip;
  }
  MetricSums epoch_sums() { return {loop_.epoch_loss_sum, loop_.epoch_correct, loop_.epoch_seen}; }
  // That count, from a posted check's flags.
  void count_dropped_on_device(const PostedCheck& p, const NonfiniteFlags& f);
  // nonfinite = skip: the message for one of the first dropped steps (stderr).
  void report_dropped(int64_t global_step, const std::string& what);
  std::optional<PostedCheck> posted_;
  bool preempted_ = false;       // some rank received a pre-emption signal (agreed)
  std::string preempt_reports_;  // which rank received which signal
  int64_t last_checkpoint_step_ = -1;
  // Fail events under an algorithm that goes on with the live ranks (check_liveness): the ranks
  // down for the step under way, whether this rank is one, and its loss's weight (0 down, else
  // world / live).
  std::vector<int> down_;
  bool down_here_ = false;
  float loss_weight_ = 1.f;
  StepLoss step_loss_;  // how forward_backward forms and weighs the loss (constructor)
  TraceSpans trace_spans_{p_.tracer};
  SlowdownTimer slowdown_timer_{w_.slowdown};
  BatchPrefetch prefetch_{p_.pipeline.batches(), p_.tracer, rep_.step_log()};
  StepPhases phases_;  // the cluster, trace_spans_, slowdown_timer_, prefetch_
  // The world's clock at the last step's start (-1: no step yet) and at the state a restart
  // resumes from (the run's first step, or the last checkpoint's); the down ranks' rank-seconds
  // and the heals' time so far (the final record's failure_lost_rank_s, recovery_s).
  double last_step_world_s_ = -1, restart_world_s_ = 0;
  double lost_rank_s_ = 0, recovery_s_ = 0;
  Failures failures_;  // the run's figures, at its end
  std::filesystem::path last_checkpoint_dir_;
};

}  // namespace dplab
