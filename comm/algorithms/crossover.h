// Crossover-SGD (ALGORITHMS.md §5; papers/crossover-sgd.txt, notes papers/notes/crossover-sgd.md):
// gossip over model segments on load-balanced random topologies, synchronous per step.
//
// Every optimizer step (once per communication interval I):
//   1. local step  x_i^{k+1/2} = x_i^k - U(g_i)         (the loop's optimizer.step(); the
//      gradient is the mean over the I micro-batches of the interval)
//   2. per segment s: all ranks draw the same derangement d_s from a shared Philox stream keyed
//      by (seed, step) (Algorithm 2, derangement.h); rank i receives segment s from d_s[i] and
//      sends it to the j with d_s[j] = i. All S sends and S receives are posted at once, tagged
//      by segment (Algorithm 1, lines 1-10), and waited for together.
//   3. merge  x_{i,s}^{k+1} = (x_{i,s}^{k+1/2} + x_{d_s[i],s}^{k+1/2}) / 2   (Algorithm 1, l. 17)
// The mixing matrix W_s = (I + Π_s)/2 is doubly stochastic: the sum over ranks of every
// parameter is unchanged by a gossip, 2 ranks average exactly, and no push-sum weight is needed.
//
// Hierarchical mode (§3.3 of the paper): the (virtual) nodes of the Topology are the groups
// (--ranks-per-node G). The gradient is averaged inside the group (GradSync on the node
// communicator, overlapped with backward), every member takes the same step, the group leaders
// (local rank 0: the leader communicator is Topology::cross() of local rank 0) gossip as above
// with M = number of groups, and each leader broadcasts its parameters to its group.
// One group = AllReduce-SGD; two groups = exact global averaging.
//
// Segments are contiguous ranges of the parameter arena (no copy to send). Evaluated model:
// rank 0's (BatchNorm statistics stay local); consensus_eval() offers the average over ranks.
//
// Options ("crossover." prefix): the keys, defaults and ranges are declared in
// crossover_options.cpp; the group allreduce's GradSync keys under "crossover.sync." (hierarchical
// mode) in comm/grad_sync_options.cpp.
//   segments      how the arena is cut (plan_gossip_segments below): blocks | layers | tensors |
//                 model | explicit "p1,p2|p3|..." groups of name prefixes
//   sampler       balanced (the paper's load-balanced roulette, restart on a dead end) or
//                 uniform (uniform over derangements)
//   interval      communication interval I: micro-batches accumulated per step
//   hierarchical  gradient allreduce in the group, gossip among group leaders
//   seed          seed of the shared topology stream (default: the run's "seed")
//   check_maps    allgather every drawn map and fail if the ranks disagree (debug)
// plus the communicator options (ranks_per_node, link.intra, link.inter, comm.*).
#pragma once
#include <functional>
#include <memory>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/derangement.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// One gossip segment: elements [begin, end) of the arena, holding tensors
// [first_tensor, last_tensor] (arena order).
struct GossipSegment {
  std::string name;  // the group key, e.g. "layer1.0", "fc", "cnn1"
  int64_t begin = 0, end = 0;
  int first_tensor = 0, last_tensor = 0;
  int64_t numel() const { return end - begin; }
};

// Cuts the arena into gossip segments by parameter name:
//   blocks   one per residual block ("layerN.M.*") plus one per other top-level module, the stem
//            (modules registered before the first block) folded into the first block; a network
//            without blocks gets one segment per top-level module (mnist_cnn: cnn1, cnn2, fc1)
//   layers   one per top-level module (first name component: conv1, bn1, layer1, ..., fc)
//   tensors  one per parameter tensor
//   model    one segment (model-wise gossip, as SGP)
//   "a,b|c"  explicit groups separated by '|', each a comma list of name prefixes (a prefix
//            matches the name itself or "prefix.*"); every parameter must match exactly one group
// Segments are returned in arena order. A group whose tensors are not contiguous in the arena is
// an error naming it.
std::vector<GossipSegment> plan_gossip_segments(const ParamArena& arena, const std::string& spec);

// The members start at the declared defaults (crossover_options.cpp; seed's default is the
// run's seed, read by from_options).
struct CrossoverOptions {
  std::string segments = crossover_option_table().default_string("crossover.segments");
  DerangementSampler sampler =
      crossover_option_table().default_choice<DerangementSampler>("crossover.sampler");
  int64_t interval = crossover_option_table().default_int("crossover.interval");
  bool hierarchical = crossover_option_table().default_bool("crossover.hierarchical");
  uint64_t seed = 0;
  bool check_maps = crossover_option_table().default_bool("crossover.check_maps");
  GradSyncOptions sync;  // hierarchical mode only
  static CrossoverOptions from_options(const Options& opt);
};

class CrossoverStrategy : public DistributedStrategy {
 public:
  CrossoverStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "crossover"; }
  // Flat mode goes on with the live ranks: the derangements are drawn over them
  // (docs/virtual_cluster.md, "Failures"). Hierarchical mode stops (its groups' allreduce).
  bool continues_after_failure() const override { return !opt_.hierarchical; }
  void setup(TrainContext& ctx) override;
  StepPlan plan(const StepInfo& step) override;
  void after_backward(const StepInfo& step) override;
  void after_step(const StepInfo& step) override;
  void drain() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // Hierarchical mode: the group gradient's compression.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;
  bool consensus_eval(const std::function<void()>& evaluate) override;

  // One gossip round (step 2-3 above, plus the group broadcast in hierarchical mode); `round`
  // keys the shared topology stream. Called by after_step(); public for tests.
  void gossip(int64_t round);
  // The S peer maps of `round` over `n` gossiping ranks (identical on every rank).
  std::vector<std::vector<int>> draw_maps(int64_t round, int n);
  const std::vector<GossipSegment>& segments() const { return segments_; }
  const CrossoverOptions& options() const { return opt_; }
  // The communicator the gossip runs on (world, or the leaders in hierarchical mode); null on a
  // non-leader in hierarchical mode.
  Communicator* gossip_comm() const;

 protected:
  // The ranks of gossip_comm() that gossip: all of them, or in flat mode the live ones.
  std::vector<int> gossip_group() const;
  // Checkpoints. Saved: the position in the communication interval ("micro") and, inside an
  // interval, the gradient accumulated so far ("grad"); the round/restart/peer counters
  // (metrics). Not saved: the peer maps (drawn from a Philox stream keyed by (seed, global
  // step): no generator position to keep), the segments (from the arena and options), this
  // rank's model and momentum (the trainer's). Intervals close at the end of every epoch, so a
  // checkpoint at an epoch boundary holds no gradient.
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  CrossoverOptions opt_;
  std::vector<GossipSegment> segments_;
  std::unique_ptr<GradSync> sync_;  // hierarchical mode
  Tensor recv_;                     // receive buffer, arena-sized, sliced per segment
  bool stepping_ = false;           // this iteration ends a communication interval
  int64_t micro_ = 0;               // micro-batches accumulated in the current interval
  int64_t rounds_ = 0, restarts_ = 0, peer_sum_ = 0;
};

std::unique_ptr<Strategy> make_crossover_strategy(std::shared_ptr<Topology> topo,
                                                  const Options& opt);

// How a checkpoint of crossover continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy crossover_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
