// DASO, Distributed Asynchronous and Selective Optimization (Coquelin et al.; ALGORITHMS.md §3,
// papers/notes/daso.md). Hierarchical data parallelism over G ranks per node and P nodes:
//
//   node-local group  the G ranks of a node (Topology::node): every batch their gradients are
//                     averaged (GradSync on the node communicator) and each takes the same
//                     local step, so the ranks of a node hold identical parameters.
//   global group g    the P ranks with local rank g, one per node (Topology::cross of local
//                     rank g). Global syncs rotate over g = 0, 1, ..., G-1, 0, ... ("the role of
//                     global synchronization rotates between groups"), reset to 0 each epoch.
//
// Per batch t of an epoch of T batches, after the local optimizer step (after_step):
//   1. stale receive: a non-blocking sync posted S' batches ago is merged by its group
//      member with Eq. 1,   x <- (2S'·x + Σ_i x_i) / (2S' + P),
//      x the member's current parameters, Σ the received sum over the group (P = nodes); the
//      member then broadcasts its parameters to its node (the "local update").
//   2. global sync start, when t % B == 0: the group member copies the flat parameter arena
//      into a send buffer and posts a non-blocking allreduce-SUM over its global group; the
//      next S batches run while it is in flight. S' = min(S, T-1-t), so a pending receive never
//      crosses an epoch. S' = 0 (S = 0, or t = T-1) is a blocking sync: plain average Σ/P, then
//      the node-local broadcast.
//   3. the last batch of every epoch is a blocking plain-average sync (daso.epoch_end_sync),
//      so every rank holds the same parameters at each epoch boundary.
// Phases over the epoch budget E: warm-up (epochs [0, W)) and cool-down (epochs [E-C, E)) sync
// blocking after every batch with the parameters on the wire as bf16 (reduced with f32
// accumulation, plain average); the cycling phase in between starts at B = B_max, S = S_init
// with f32 non-blocking syncs. At the end of each cycling epoch the world-mean training loss
// feeds a plateau detector (relative threshold, patience): on a plateau B and S halve (floor
// 1); when both are 1 they reset to (B_max, S_init).
//
// Options ("daso." prefix): the keys, defaults (the paper's / the authors' code's) and ranges
// are declared in daso_options.cpp; the node-local GradSync's keys under "daso.local." in
// comm/grad_sync_options.cpp.
//   plateau_patience   a plateau is the (patience+1)-th consecutive epoch without progress
//                      (PyTorch ReduceLROnPlateau / Heat semantics)
//   S_reduction        halve (paper) or decrement (authors' code: S-1, floor 1)
//   phases             false: fixed B = B_max, S every epoch, no warm-up, cool-down or plateau
//                      cycle (the paper's parameter study, Table 2)
// plus the communicator options (ranks_per_node, link.intra, link.inter, comm.wait, ...).
//
// Evaluated model: at epoch boundaries every rank is identical (step 3); after a stop in the
// middle of an epoch (max_steps), drain() merges what is pending and rank 0's model is the one
// evaluated. Only trainable parameters travel; BatchNorm running statistics stay local and are
// averaged over the world before evaluation (drain). Momentum buffers are never synced.
#pragma once
#include <deque>
#include <memory>
#include <vector>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/reshard_policy.h"
#include "dplab/optim/schedule.h"

namespace dplab {

enum class DasoPhase { warmup = 0, cycling = 1, cooldown = 2 };

// The members start at the declared defaults (daso_options.cpp).
struct DasoConfig {
  int B_max = static_cast<int>(daso_option_table().default_int("daso.B_max"));
  int S_init = static_cast<int>(daso_option_table().default_int("daso.S"));
  int64_t warmup_epochs = daso_option_table().default_int("daso.warmup_epochs");
  int64_t cooldown_epochs = daso_option_table().default_int("daso.cooldown_epochs");
  double plateau_threshold = daso_option_table().default_double("daso.plateau_threshold");
  int plateau_patience = static_cast<int>(daso_option_table().default_int("daso.plateau_patience"));
  bool halve_S =
      daso_option_table().default_string("daso.S_reduction") == "halve";  // else decrement
  bool phases = daso_option_table().default_bool("daso.phases");
  bool epoch_end_sync = daso_option_table().default_bool("daso.epoch_end_sync");
  DType blocking_wire = parse_dtype(daso_option_table().default_string("daso.blocking_wire"));
  DType global_wire = parse_dtype(daso_option_table().default_string("daso.global_wire"));
  static DasoConfig from_options(const Options& opt);
};

// The phase of `epoch` (0-based) in a run of `total_epochs`. Warm-up wins over cool-down when
// they overlap (short runs); with phases off every epoch cycles.
DasoPhase daso_phase(int64_t epoch, int64_t total_epochs, const DasoConfig& cfg);

// One global synchronisation of an epoch.
struct DasoSync {
  int64_t send_batch = 0;   // batch after whose optimizer step the parameters are sent
  int64_t merge_batch = 0;  // batch after whose step the sum is merged (Eq. 1)
  int group = 0;            // global group = local rank of the members
  int S = 0;                // effective staleness S' = merge - send; 0 = blocking plain average
  bool blocking() const { return S == 0; }
  bool operator==(const DasoSync&) const = default;
};

// The global syncs of an epoch of T batches, in the order they start, for G ranks per node:
// blocking phases sync after every batch; cycling sends at t % B == 0 with S' = min(S, T-1-t)
// and (epoch_end_sync) a blocking sync at t = T-1. Groups rotate round-robin from 0.
std::vector<DasoSync> daso_epoch_schedule(int64_t T, DasoPhase phase, int B, int S, int G,
                                          bool epoch_end_sync = true);

// The B/S cycle of the cycling phase, driven by a plateau detector on the epoch loss.
class DasoCycle {
 public:
  explicit DasoCycle(const DasoConfig& cfg);
  int B() const { return B_; }
  int S() const { return S_; }
  int plateaus() const { return plateaus_; }
  // End of `epoch` with the world-mean training loss. Only cycling epochs feed the detector.
  // On a plateau: B, S halve (floor 1; S per S_reduction) or, when both are 1, reset to
  // (B_max, S_init). Returns true when a plateau was declared.
  bool end_epoch(int64_t epoch, int64_t total_epochs, double loss);
  // Checkpoint state: "B", "S", "plateaus" and the detector under "detector.".
  void save_state(StateDict& out) const;
  void load_state(const StateDict& in);

 private:
  DasoConfig cfg_;
  PlateauDetector detector_;
  int B_, S_;
  int plateaus_ = 0;
};

class DasoStrategy : public DistributedStrategy {
 public:
  DasoStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "daso"; }
  void setup(TrainContext& ctx) override;
  void before_forward(const StepInfo& step) override;
  void after_backward(const StepInfo& step) override;
  void after_step(const StepInfo& step) override;
  void end_epoch(int64_t epoch, double mean_train_loss) override;
  void drain() override;
  CommStats take_stats() override;
  // B, S, phase and global syncs of the last epoch; next_B, next_S for the next cycling epoch.
  std::map<std::string, double> state() const override;
  // A warning when warm-up and cool-down leave no cycling epoch; node-local compression.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;
  // The cool-down (the last daso.cooldown_epochs epochs) is planned from epochs.
  std::vector<std::string> planned_from_epochs() const override;

  const DasoConfig& config() const { return cfg_; }
  const DasoCycle& cycle() const { return cycle_; }
  GradSync& local_sync() { return *local_sync_; }
  // The current epoch's schedule (built at its first after_step).
  const std::vector<DasoSync>& epoch_schedule() const { return sched_; }

 protected:
  // Checkpoints, between steps, with or without drain(). Saved: the B/S cycle and its plateau
  // detector ("cycle.*"), the current epoch's schedule and position in it (a resume in the
  // middle of an epoch goes on with the same syncs), the syncs sent and not yet merged with
  // their received sums (save_state waits for them without merging, so a checkpoint without
  // drain() does not change the trajectory; drain() merges them early), the epoch's
  // phase/B/S/sync count and the last world loss (metrics), and the topology (nodes,
  // ranks_per_node), which load_state checks. The node's parameters and this rank's momentum
  // are the trainer's. Not saved: the node-local GradSync (no state across steps), free send
  // buffers (scratch), statistics.
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  // A global sync posted and not yet merged.
  struct GlobalSend {
    DasoSync sync;
    Pending sent;  // the allreduce; empty on ranks outside the group (and once received)
    Tensor buf;    // the sent parameters, replaced by the group's sum
  };
  void start_schedule(const StepInfo& step);
  void post(const DasoSync& s);
  void merge(GlobalSend& g);  // Eq. 1 + local update
  void blocking_sync(const DasoSync& s, DType wire);
  void broadcast_from(int group);
  bool member(int group) const { return topo_->local_rank() == group; }

  DasoConfig cfg_;
  GradSyncOptions local_opt_;
  std::unique_ptr<GradSync> local_sync_;
  DasoCycle cycle_;

  int64_t sched_epoch_ = -1;
  std::vector<DasoSync> sched_;
  size_t next_ = 0;
  std::deque<GlobalSend> pending_;
  std::vector<Tensor> free_bufs_;
  int64_t total_epochs_ = 0;

  // For state(): the last epoch's settings and counters.
  DasoPhase epoch_phase_ = DasoPhase::warmup;
  int epoch_B_ = 0, epoch_S_ = 0;
  int64_t epoch_syncs_ = 0;
  double last_loss_ = 0;
};

std::unique_ptr<Strategy> make_daso_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of daso continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy daso_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
