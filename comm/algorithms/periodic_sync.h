// PeriodicSyncStrategy: the skeleton of the periodic-sync family (issue #32 item 4): local SGD and
// post-local SGD (local_sgd.h), DiLoCo (diloco.h), SlowMo (slowmo.h) and Streaming DiLoCo
// (streaming_diloco.h). As torchft's DiLoCo(LocalSGD), they share the round logic and differ
// only in their sync step: every rank takes inner steps on its own batches (the run's optimizer,
// stepped by the training loop), and a round ends with the algorithm's sync step:
//
//   local SGD        the parameters replaced by their average over the ranks
//   DiLoCo           the outer step on the averaged outer gradient (Algorithm 1, lines 11-15)
//   SlowMo           the exact average and the slow-momentum step (Algorithm 1, lines 7-9)
//   Streaming DiLoCo every fragment's outer step at once (its staggered per-fragment syncs run
//                    in the per-step hook; see below)
//
// The skeleton owns the rounds:
//   - it counts the inner steps of the round in progress (after_step), and ends the round
//       after `period` (H) inner steps (period 0: never by count),
//       after the last step of every epoch, unless rounds span epochs (below),
//       at finish_training() when a round is in progress (a run stopped by max_steps, or the
//       last round of a run whose rounds span epochs), so the final model is the global one;
//   - it saves and restores the round counters (steps in the round, rounds so far, and the
//     period, which a round in progress needs unchanged) under the keys the algorithm names
//     (each keeps the names its checkpoints have always had);
//   - consensus_eval: when rounds span epochs, an epoch's evaluation finds each rank's local model
//     (a round in progress); the average over the ranks is then evaluated as the consensus model
//     (the "consensus" figures of the epoch record), so the global model is still reported.
//
// Rounds and epochs: `<algorithm>.round_spans_epochs` (the algorithm reads it; false for local
// SGD, post-local SGD, DiLoCo and SlowMo, true for Streaming DiLoCo, as before issue #32).
// false: the last step of every epoch ends a round, so the evaluated model is the global one,
// the same on every rank, and every epoch holds ceil(steps_per_epoch / H) rounds. true: a round
// continues across the epoch boundary: ceil(total_steps / H) rounds in all, the last one ended
// by finish_training().
//
// How an algorithm plugs in: derive, pass the PeriodicSyncConfig (period, round_spans_epochs,
// checkpoint keys), and override
//   sync(end)                    the sync step, at every round's end (`end`: why it ends). The
//                                round counters still describe the round that ends: rounds() is
//                                the number of earlier rounds (0 at the first sync).
//   inner_step(step, round_ends) optional: after every inner step, before the round's end is
//                                acted on (SlowMo over SGP gossips unless the round ends;
//                                Streaming DiLoCo sends and applies its fragments here).
//   rounds_running()             optional: false suspends the rounds (post-local SGD's
//                                AllReduce-SGD phase: no step is counted, no round ends).
//   save_sync_state/load_sync_state  the algorithm's own state (the name and the round counters
//                                are written and checked here).
// plus the Strategy calls it needs besides (setup, after_backward, drain, take_stats, state).
// after_step and finish_training belong to the skeleton.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "dplab/comm/distributed_strategy.h"

namespace dplab {

struct PeriodicSyncConfig {
  int64_t period = 1;  // H: inner steps per round; 0: no round ends by count
  bool round_spans_epochs = false;
  // Checkpoint keys: the period ("": not saved; the algorithm checks its own), the inner steps
  // of the round in progress, the rounds so far.
  std::string period_key, steps_key, rounds_key;
  // The option that sets `period`, for the notes ("": "<name()>.H").
  std::string period_option;
};

class PeriodicSyncStrategy : public DistributedStrategy {
 public:
  PeriodicSyncStrategy(std::shared_ptr<Topology> topo, PeriodicSyncConfig config);
  // Counts the inner step, calls inner_step(), and ends the round when it is due.
  void after_step(const StepInfo& step) final;
  // Ends the round in progress, if any (every rank stops at the same step, so all reach this).
  void finish_training() final;
  // Rounds spanning epochs, 2 ranks or more: evaluates the average of the ranks' parameters
  // (one "consensus average" allreduce; the BatchNorm statistics are drain()'s average), then
  // restores this rank's own. Otherwise false: every epoch ended a round.
  bool consensus_eval(const std::function<void()>& evaluate) override;
  // The run's model: the algorithm's global model (global_model()) in the middle of a round,
  // else the consensus average above.
  bool with_run_model(const std::function<void()>& use) override;
  // A warning when rounds span epochs and the period is longer than the run: no round ends
  // before the end of training, whose sync is then the only one.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;

  int64_t period() const { return config_.period; }
  bool round_spans_epochs() const { return config_.round_spans_epochs; }
  int64_t steps_in_round() const { return steps_; }  // inner steps of the round in progress
  int64_t rounds() const { return rounds_; }         // rounds ended so far

 protected:
  enum class RoundEnd { period, epoch, training };
  // The algorithm's sync step, at the end of every round.
  virtual void sync(RoundEnd end) = 0;
  virtual void inner_step(const StepInfo& step, bool round_ends) {}
  virtual bool rounds_running() const { return true; }
  // The global model the algorithm keeps apart from the ranks' (DiLoCo's and Streaming
  // DiLoCo's θ, the same on every rank), or null: the run's model in the middle of a round.
  virtual const Tensor* global_model() const { return nullptr; }
  // The round position a checkpoint holds, checked, handed to load_sync_state before it is
  // assigned (so a failed load leaves the counters alone).
  struct RoundPosition {
    int64_t steps = 0, rounds = 0;
  };
  virtual void save_sync_state(StateDict& out) const {}
  virtual void load_sync_state(const StateDict& in, const RoundPosition& at) {}

 private:
  void save_algorithm_state(StateDict& out) const final;
  void load_algorithm_state(const StateDict& in) final;
  void end_round(RoundEnd end);
  PeriodicSyncConfig config_;
  int64_t steps_ = 0;
  int64_t rounds_ = 0;
};

}  // namespace dplab
