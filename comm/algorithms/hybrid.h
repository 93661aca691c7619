// Hybrid parallel SGD (ALGORITHMS.md §2; thesis papers/hybrid-sgd-thesis.txt, Algorithm 4 and
// the appendix listing): the epoch budget E is split into three stages.
//
//   stage 1  P-SGD (Algorithm 3, lines 3-7): every iteration the gradient is averaged over all K
//            ranks (GradSync, DDP-like) and every rank takes the same step.
//   stage 2  gradient accumulation (lines 8-15): W-1 backward passes accumulate into the local
//            gradient with no communication and no step (no_sync); on the W-th the accumulated
//            gradient is allreduced and averaged over the K ranks (NOT divided by W: the step is
//            on the sum of W mini-batch mean gradients, as in the thesis code), then the
//            optimizer steps and the gradient is zeroed. Models stay identical.
//   stage 3  "influenced synchronous" (lines 16-24): every iteration each rank steps its own
//            model on a freshly zeroed gradient; on every R-th iteration that batch's gradient
//            is first averaged over the K ranks (each computed at the rank's own parameters).
//            Models diverge; momentum buffers stay per rank and are never reset or averaged.
//   end      "Synchronize and average all local models" (line 25), done ONCE after the last
//            iteration: theta <- (1/K) sum_k theta_k (one allreduce of the parameter arena),
//            in finish_training(). Per-epoch evaluations in between see rank 0's model.
//
// Stage split (epochs 0-based, E = total epochs):
//   ceil    (default, thesis code) S = ceil(E/3): stage 1 = [0, S), stage 2 = [S, 2S], stage 3 =
//           the rest. E = 20: 7 / 8 / 5 epochs, stage changes at epochs 7 and 15.
//   thirds  (Algorithm 4 with i = epoch + 1): stage 1 iff 3i <= E, stage 2 iff 3i <= 2E, else 3;
//           exact thirds when 3 | E (what the 1/3 + 1/(3W) + 1/(3R) formula assumes).
// Counter (which iterations communicate):
//   global  (default, thesis code) it = global 0-based iteration: stage 2 syncs iff it % W == 0,
//           stage 3 iff it % R == 0 (the phase drifts across epochs).
//   epoch   (Algorithm 4) q = 1-based iteration within the epoch: q % W == 0, q % R == 0.
//           Stage-2 micro-batches left at the end of an epoch carry into the next window.
// Gradient bookkeeping as in the thesis code: stages 1 and 3 zero the gradient before every
// backward; stage 2 zeroes only after a synced step, so the last stage-1 (averaged) gradient
// carries into the first stage-2 window (carry_grad = false zeroes it instead), and stage-2
// leftovers are dropped when stage 3 starts.
//
// Modes: hybrid (the three stages), each_iter (P-SGD every iteration, models identical, no final
// average), only_end (local steps every iteration, no communication until the final average).
//
// Options ("hybrid." prefix): the keys, defaults and ranges are declared in hybrid_options.cpp,
// GradSync's (bucket_cap_mb, first_bucket_mb, wire, hierarchical, ...) in
// comm/grad_sync_options.cpp.
//   final_average  ignored by each_iter
//   accumulate     sum | mean: stage 2 steps on the sum of the W accumulated mean gradients
//                  (thesis code) or on that sum divided by W (the big-batch mean; not in the
//                  thesis, a study variant: studies/hybrid/README.md)
// plus the communicator options (ranks_per_node, link.*, comm.*; comm/communicator.h).
// state(): stage, mode (0 hybrid, 1 each_iter, 2 only_end), W, R, syncs (gradient allreduce
// iterations so far), final_averaged (0/1).
#pragma once
#include <memory>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

enum class HybridMode { hybrid, each_iter, only_end };
enum class HybridSplit { ceil, thirds };
enum class HybridCounter { global, epoch };

// The members start at the declared defaults (hybrid_options.cpp; each enum's enumerators are
// its key's choices, in the declared order).
struct HybridConfig {
  HybridMode mode = hybrid_option_table().default_choice<HybridMode>("hybrid.mode");
  int64_t W = hybrid_option_table().default_int("hybrid.W");
  int64_t R = hybrid_option_table().default_int("hybrid.R");
  HybridSplit split = hybrid_option_table().default_choice<HybridSplit>("hybrid.split");
  HybridCounter counter = hybrid_option_table().default_choice<HybridCounter>("hybrid.counter");
  bool carry_grad = hybrid_option_table().default_bool("hybrid.carry_grad");
  bool final_average = hybrid_option_table().default_bool("hybrid.final_average");
  bool accumulate_mean = hybrid_option_table().default_string("hybrid.accumulate") == "mean";
  // Reads hybrid's own "hybrid.*" keys (hybrid_options.cpp; every key is read, so typos are
  // reported by the driver).
  static HybridConfig from_options(const Options& opt);
};

// What one iteration does.
struct HybridAction {
  int stage = 1;            // 1, 2 or 3 (only_end: 3, each_iter: 1)
  bool sync = true;         // the gradient is allreduced (averaged over the K ranks)
  bool step = true;         // the optimizer steps after backward
  bool zero_before = true;  // the gradient is zeroed before backward
};

// The stage of 0-based `epoch` out of `total_epochs` under the configured split.
int hybrid_stage(const HybridConfig& cfg, int64_t epoch, int64_t total_epochs);
// The schedule as a pure function of the iteration (uses epoch, step_in_epoch, global_step,
// steps_per_epoch and total_epochs of `step`).
HybridAction hybrid_schedule(const HybridConfig& cfg, const StepInfo& step);

class HybridStrategy : public DistributedStrategy {
 public:
  HybridStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "hybrid"; }
  void setup(TrainContext& ctx) override;
  StepPlan plan(const StepInfo& step) override;
  void after_backward(const StepInfo& step) override;
  void drain() override;
  // The one final parameter average (idempotent: a second call does nothing).
  void finish_training() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // The stages the run reaches (a warning for a stage that never starts) and compression.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;
  // Mode hybrid: the stages are planned from epochs.
  std::vector<std::string> planned_from_epochs() const override;
  // Stage 3 before the final average (the ranks' models differ): their average.
  bool consensus_eval(const std::function<void()>& evaluate) override;

  const HybridConfig& config() const { return cfg_; }
  GradSync& grad_sync() { return *sync_; }
  bool finished() const { return final_done_; }
  bool final_averaged() const { return averaged_; }

 protected:
  // Checkpoints. Saved: the gradient arena ("grad": stage 2 accumulates across iterations, and
  // the last stage-1 gradient carries into stage 2; which iteration zeroes it is a function of
  // the iteration, so it is saved whatever the stage), the stage, the sync count and whether
  // the final average ran. Not saved: each iteration's action and GradSync's no_sync (plan()
  // recomputes both from the iteration), this rank's model and momentum (the trainer's; they
  // differ between ranks in stage 3).
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  HybridConfig cfg_;
  GradSyncOptions sync_opt_;
  std::unique_ptr<GradSync> sync_;
  HybridAction current_;
  int stage_ = 1;
  int64_t syncs_ = 0;
  bool final_done_ = false;  // finish_training() ran
  bool averaged_ = false;    // and averaged the parameters
};

std::unique_ptr<Strategy> make_hybrid_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of hybrid continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy hybrid_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
