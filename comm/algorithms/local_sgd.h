// Local SGD and post-local SGD (ALGORITHMS.md §7), the fixed-period baselines of Oscars, on the
// periodic-sync skeleton (comm/algorithms/periodic_sync.h).
//
// Local SGD: every rank takes plain local optimizer steps on its own batches; after every H
// local steps (a round) the parameters are replaced by their average over the ranks (the sync
// step: uniform 1/N, blocking allreduce). By default the period restarts at each epoch, and the
// last step of an epoch always ends with an average, so the evaluated model is the average and
// every rank does the same number of averages per epoch (ceil(steps_per_epoch / H)); with
// local_sgd.round_spans_epochs the period runs on across epochs (ceil(total_steps / H)
// averages, the last at the end of training) and each epoch's consensus evaluation reports the
// average. Momentum buffers stay local.
//
// Post-local SGD (Lin et al., "Don't use large mini-batches, use local SGD"): AllReduce-SGD
// (gradient average every step through GradSync, as comm/algorithms/allreduce.h) for the first
// `post_local_sgd.switch_epoch` epochs (no rounds run then), then local SGD with period H.
//
// Options: the keys, their defaults and ranges are declared in local_sgd_options.cpp:
//   local_sgd.H                     local steps between parameter averages (both)
//   local_sgd.round_spans_epochs    true: a period continues across epoch boundaries
//   post_local_sgd.switch_epoch     epochs of AllReduce-SGD before switching to local SGD
//   allreduce.*                     GradSync options of the AllReduce-SGD phase
//                                   (comm/grad_sync_options.h)
// plus the communicator options (ranks_per_node, link.*, comm.*).
//
// state(): H, averages (parameter averages since the start), phase (0 allreduce, 1 local).
#pragma once
#include <memory>

#include "dplab/comm/algorithms/periodic_sync.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// Replaces `arena`'s parameters by their average over `comm`: one blocking allreduce (1/N), a
// "parameter average" event on `meter` (its exposed wait = its time in flight: for a rank that
// arrives early mostly waiting for the slowest rank; on NCCL the next step's kernels wait for
// it on the device). Nothing on one rank. Local SGD's sync step, also SlowMo's line 7 and
// Oscars' average.
// `weight` (DistributedStrategy::live_weight): this rank's parameters weigh that much in the
// average, so that it is the live ranks' mean while ranks are down (fail events).
void average_parameters(CommMeter& meter, Communicator& comm, ParamArena& arena,
                        float weight = 1.f);

class LocalSgdStrategy : public PeriodicSyncStrategy {
 public:
  LocalSgdStrategy(std::shared_ptr<Topology> topo, const Options& opt, bool post_local);
  std::string name() const override { return post_local_ ? "post_local_sgd" : "local_sgd"; }
  // Local SGD goes on with the live ranks: a round's average is over them (live_weight); a down
  // rank's local steps count nowhere. Post-local SGD's allreduce phase cannot.
  bool continues_after_failure() const override { return !post_local_; }
  void setup(TrainContext& ctx) override;
  void begin_epoch(int64_t epoch) override;
  void after_backward(const StepInfo& step) override;
  void drain() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // Post-local SGD: the local SGD phase that never starts (post_local_sgd.switch_epoch at or
  // after epochs) and the allreduce phase's compression; the skeleton's note on rounds.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;

  int64_t H() const { return period(); }
  bool in_allreduce_phase() const { return grad_phase_; }
  int64_t averages() const { return rounds(); }

 protected:
  // The sync step: the parameter average.
  void sync(RoundEnd) override;
  // AllReduce-SGD phase: ranks are identical after every step; no rounds.
  bool rounds_running() const override { return !grad_phase_; }
  // Checkpoints. Saved: local steps since the last average ("since_average", a checkpoint in
  // the middle of a period resumes it), the average count ("averages"), H, and post-local SGD's
  // phase (also recomputed from the epoch by begin_epoch; loading sets GradSync's no_sync from
  // it). Each rank's model and momentum are the trainer's (they differ inside a period).
  void save_sync_state(StateDict& out) const override;
  void load_sync_state(const StateDict& in, const RoundPosition& at) override;

 private:
  bool post_local_;
  int64_t switch_epoch_ = 0;
  GradSyncOptions sync_opt_;
  std::unique_ptr<GradSync> sync_;  // post-local SGD only
  bool grad_phase_ = false;
};

std::unique_ptr<Strategy> make_local_sgd_strategy(std::shared_ptr<Topology> topo,
                                                  const Options& opt);
std::unique_ptr<Strategy> make_post_local_sgd_strategy(std::shared_ptr<Topology> topo,
                                                       const Options& opt);

// How a checkpoint of local_sgd and post_local_sgd continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy local_sgd_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
