// A training run on a virtual cluster (option cluster; issue #20 items 2-3,
// docs/virtual_cluster.md): the rank's virtual clock, built by the driver on its compute thread
// and handed to the algorithm's Topology, which the driver builds (train/loop/model_parts.h),
// and an observer of the step's phases (train/loop/step_phases.h) that says what is compute:
//
//   measured (cluster.compute = measured): the clock counts the compute thread's CPU time x
//     compute_scale x this rank's --slowdown factor while a step runs; between steps (loading,
//     records, progress, checkpoints, evaluation, the ranks' stop agreement) it does not count
//     (pause/resume): those are not part of the modelled step.
//   profile (cluster.compute = profile:FILE): the clock is manual; the ends of forward, backward,
//     the check and the optimizer add the profile's times (x the factor), and GradSync's buckets
//     are ready at backward's start + the profile's fraction (train/virtual/profile_replay.h).
//   Either way a step's compute is also multiplied by the slow events (comm/cluster/events.h)
//   that apply when it begins (step_begin): by step range, or by the virtual time then.
//
// The loader is hidden by prefetch (costs no virtual time) unless cluster.data_rate = R > 0
// samples/s: the loader restarts with each epoch and delivers batch k of the epoch (n samples
// each) at epoch start + k n / R at the earliest; a step waits (in virtual time) until its batch
// is ready: ready_k = max(asked_k, ready_{k-1} + n / R), ready_0 = the epoch's start.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/core/device.h"
#include "dplab/core/options.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/time_source.h"
#include "dplab/train/loop/step_phases.h"
#include "dplab/train/report/run_record.h"
#include "dplab/train/virtual/failure_data.h"
#include "dplab/train/virtual/profile_replay.h"

namespace dplab {

// The driver's first check of a cluster run (before any set-up), returning option threads as
// it must be applied. A rank's compute must run on its one thread (OpenMP and oneDNN
// single-threaded), whose CPU time the clock reads: 0 (the default) becomes 1, 1 stays, more
// is a usage error. The cluster models the MPI backend on the CPU: a CUDA device or NCCL is a
// usage error (a GPU's compute enters through a profile). Without a cluster: `threads`
// unchanged, nothing checked.
int64_t check_cluster_run(const Options& opt, int64_t threads);

class VirtualRun;
// The training driver's call: VirtualRun::from_options with MPI's rank and world size and this
// rank's --slowdown, then attach_model. Null without a cluster.
std::unique_ptr<VirtualRun> make_virtual_run(const Options& opt, Device device,
                                             const std::string& model, int64_t batch,
                                             const ParamArena& arena);

class VirtualRun : public StepObserver {
 public:
  // Null without option cluster (or cluster = off). Otherwise checks that the run can be
  // modelled (the MPI backend on a CPU device) and builds the rank's VirtualTime on the calling
  // thread, installed for the world communicators built on it until the VirtualRun is gone.
  // `rank`, `world_size`: the MPI world's; `slowdown`: this rank's --slowdown factor.
  static std::unique_ptr<VirtualRun> from_options(const Options& opt, Device device, int rank,
                                                  int world_size, double slowdown);
  ~VirtualRun();
  VirtualRun(const VirtualRun&) = delete;
  VirtualRun& operator=(const VirtualRun&) = delete;

  // Profile compute: loads the profile and checks it against the run (model, per-rank batch,
  // parameter tensors); call once the model exists, before the algorithm's set-up. No-op when
  // compute is measured.
  void attach_model(const std::string& model, int64_t batch, const ParamArena& arena);

  std::shared_ptr<TimeSource> time() const { return source_; }
  // "virtual:<platform>" (the records' time_base).
  std::string time_base() const;
  const cluster::VirtualTime& virtual_time() const { return *vt_; }
  // The clock for the algorithm's communicators (Topology::from_options).
  const std::shared_ptr<cluster::VirtualTime>& shared_virtual_time() const { return vt_; }
  bool replays_profile() const { return replay_.has_value(); }
  // One line for the run header: the platform, its shape, how compute and loading are timed.
  std::string describe() const;

  // The loop's hooks, on the compute thread.
  void pause();   // a step's work is over: what follows is not compute (measured)
  void resume();  // a step's work goes on (after a pause inside the step)
  // Global step `step` begins: resume(), and its compute factor is this rank's --slowdown x the
  // slow events that apply now (comm/cluster/events.h).
  void step_begin(int64_t step) override;
  // This rank is down (a fail event; train/virtual/liveness.h) from the next step_begin on: its
  // steps compute nothing that counts, so none of their compute is charged (the factor is 0)
  // and its clock follows the live ranks' through the collectives it still takes part in.
  void set_down(bool down) { down_ = down; }
  // What becomes of a down rank's samples (option cluster.failure_data; failure_data.h).
  FailureData failure_data() const { return failure_data_; }
  // This step's batch is `share` times the per-rank batch (a live rank taking down ranks'
  // samples, failure_data.h; 1 otherwise): a replayed profile's forward and backward, and the
  // buckets' readiness, scale with it (compute linear in the batch); measured compute measures
  // it. Call after step_begin.
  void set_batch_share(double share) { batch_share_ = share; }
  // A resumed run: the clock goes on from `t`, the checkpoint's reading (its elapsed_s), so that
  // the fail and slow events' windows and the run's time figures continue where they were.
  void continue_at(double t) { vt_->clock.wait_until(t); }
  // A new epoch: the loader restarts (cluster.data_rate).
  void begin_epoch();
  // The step's batch of `samples` arrived (while paused): waits for it in virtual time under
  // cluster.data_rate.
  void batch_arrived(int64_t samples);
  // The step's phases (train/loop/step_phases.h). Profile compute adds each phase's time at
  // its end (the optimizer's only when `stepped`), and backward's start places the buckets;
  // measured compute counts the CPU time. After the check the clock pauses (the ranks'
  // agreement is not modelled) until the optimizer begins; at the step's end it pauses.
  void begin(StepPhase phase) override;
  void end(StepPhase phase, bool stepped) override;
  void step_end() override { pause(); }

 private:
  VirtualRun(std::shared_ptr<cluster::VirtualTime> vt, int rank, std::string compute,
             double data_rate, double slowdown, std::string profile_path);
  std::shared_ptr<cluster::VirtualTime> vt_;
  std::shared_ptr<TimeSource> source_;
  std::string compute_;       // "measured" or the profile's path
  std::string profile_path_;  // empty: measured
  double data_rate_ = 0;
  int rank_ = 0;  // world rank
  double slowdown_ = 1;
  std::string slowdown_spec_;  // option slowdown, RANK=FACTOR,... ("" none): the run header
  double events_factor_ = 1;   // the slow events' factor of the step under way
  bool down_ = false;          // set_down
  double batch_share_ = 1;     // set_batch_share
  FailureData failure_data_ = FailureData::reassign;
  std::optional<ProfileReplay> replay_;
  double backward_start_ = 0;
  double loader_ready_ = 0;  // when the loader delivered its last batch (cluster.data_rate)
};

// The run record's facts of a virtual cluster: time_base, its shape, the header's line.
void cluster_facts(const VirtualRun& run, RunFacts& f);

}  // namespace dplab
