// Local SGD and post-local SGD (ALGORITHMS.md §7), the fixed-period baselines of Oscars.
//
// Local SGD: every rank takes plain local optimizer steps on its own batches; after every H
// local steps the parameters are replaced by their average over the ranks (uniform 1/N,
// blocking allreduce). The period restarts at each epoch, and the last step of an epoch always
// ends with an average, so the evaluated model is the average and every rank does the same
// number of averages per epoch (ceil(steps_per_epoch / H)). Momentum buffers stay local.
//
// Post-local SGD (Lin et al., "Don't use large mini-batches, use local SGD"): AllReduce-SGD
// (gradient average every step through GradSync, as comm/algorithms/allreduce.h) for the first
// `post_local_sgd.switch_epoch` epochs, then local SGD with period H.
//
// Options:
//   local_sgd.H                     4   local steps between parameter averages (both strategies)
//   post_local_sgd.switch_epoch     1   epochs of AllReduce-SGD before switching to local SGD
//   allreduce.*                         GradSync options of the AllReduce-SGD phase
// plus the communicator options (ranks_per_node, link.*, comm.*).
//
// state(): H, averages (parameter averages since the start), phase (0 allreduce, 1 local).
#pragma once
#include <memory>

#include "dplab/comm/device_waits.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"

namespace dplab {

// Replaces `arena`'s parameters by their average over `comm` (blocking allreduce, 1/N). Returns
// the statistics; exposed_wait_s = in_flight_s = time spent in the collective (for a rank that
// arrives early this is mostly waiting for the slowest rank). `tracer`: a "parameter average"
// comm event and a "wait parameter average" event over the same interval. `waits`: on NCCL the
// two figures are measured on the device into it (comm/device_waits.h; both 0 here, the caller's
// take_stats adds them); null, or on MPI: host time, as before. `time`: the run's time base the
// host figures are measured on (TrainContext::time: virtual under a cluster); null: the wall
// clock.
CommStats average_parameters(Communicator& comm, ParamArena& arena, trace::Tracer* tracer = nullptr,
                             DeviceWaits* waits = nullptr, TimeSource* time = nullptr);

class LocalSgdStrategy : public Strategy {
 public:
  LocalSgdStrategy(const Options& opt, bool post_local);
  LocalSgdStrategy(std::shared_ptr<Topology> topo, const Options& opt, bool post_local);
  std::string name() const override { return post_local_ ? "post_local_sgd" : "local_sgd"; }
  void setup(TrainContext& ctx) override;
  void begin_epoch(int64_t epoch) override;
  void after_backward(const StepInfo& step) override;
  void after_step(const StepInfo& step) override;
  void finish_training() override;
  void drain() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // Checkpoints. Saved: local steps since the last average (a checkpoint in the middle of a
  // period resumes it), the average count, and post-local SGD's phase (also recomputed from the
  // epoch by begin_epoch; load_state sets GradSync's no_sync from it). Each rank's model and
  // momentum are the trainer's (they differ inside a period).
  void save_state(StateDict& out) const override;
  void load_state(const StateDict& in) override;
  int rank() const override { return topo_->world().rank(); }
  int world_size() const override { return topo_->world().size(); }

  int64_t H() const { return H_; }
  bool in_allreduce_phase() const { return grad_phase_; }
  int64_t averages() const { return averages_; }

 private:
  void average();
  std::shared_ptr<Topology> topo_;
  bool post_local_;
  int64_t H_;
  int64_t switch_epoch_ = 0;
  GradSyncOptions sync_opt_;
  std::unique_ptr<GradSync> sync_;  // post-local SGD only
  bool grad_phase_ = false;
  int64_t since_avg_ = 0;  // local steps since the last average
  int64_t averages_ = 0;
  CommStats stats_;
  DeviceWaits device_waits_;  // average_parameters' figures on NCCL
};

std::unique_ptr<Strategy> make_local_sgd_strategy(const Options& opt);
std::unique_ptr<Strategy> make_post_local_sgd_strategy(const Options& opt);

}  // namespace dplab
