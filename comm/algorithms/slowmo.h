// SlowMo, slow momentum (Wang, Tantia, Ballas, Rabbat, "SlowMo: Improving Communication-Efficient
// Distributed SGD with Slow Momentum", ICLR 2020, arXiv:1910.00643), Algorithm 1, with local SGD
// or SGP as the base algorithm (here with local SGD; SGP below):
//
//   1    u_0 = 0
//   2    for t = 0, 1, …: at every worker i in parallel
//   3      (base optimizer buffers: maintained, see below)
//   4-5    for k = 0 … τ−1: x_{t,k+1}^(i) = x_{t,k}^(i) − γ_t d_{t,k}^(i)  (base optimizer alone)
//   7      x_{t,τ} = (1/m) Σ_i x_{t,τ}^(i)                  (exact average, allreduce)
//   8      u_{t+1} = β u_t + (x_{t,0} − x_{t,τ}) / γ_t      (slow momentum)
//   9      x_{t+1,0} = x_{t,0} − α γ_t u_{t+1}              (outer iterate)
//
// m = the workers. As fairscale's SlowMoDistributedDataParallel (nprocs_per_node), by default
// (slowmo.node_workers) the ranks of a node form one worker: before every base step they average
// their gradients by an allreduce on the node (so each worker's step is on the node's batch),
// and they hold the same parameters; m = the number of nodes (the host's, or --ranks-per-node's
// virtual ones). slowmo.node_workers = false: every rank is a worker, m = the world size. The
// base optimizer is the run's optimizer, stepped by the training loop on the rank's batches; γ_t is
// its learning rate at the exact average (the lr schedule's value then, as fairscale reads
// param_groups' lr at the SlowMo step). Line 3: the base optimizer's buffers (momentum, Adam
// moments) are maintained: they stay local, neither reset nor averaged. Lines 8-9 are the SGD
// heavy-ball step (PyTorch's rule, no Nesterov) on the gradient (x_{t,0} − x_{t,τ}) / γ_t with
// learning rate α γ_t, run by the fused SGD kernel (u_0 = 0 makes its first step u_1 = g exactly).
// With α = 1 and β = 0, x_{t+1,0} is the average (to rounding): local SGD with period τ.
//
// Base algorithm (slowmo.base):
//   local  local SGD (fairscale's LOCALSGD): the base steps, and every slowmo.localsgd_frequency
//          (k) steps of a round, counted from its start, the workers' parameters replaced by
//          their average (an allreduce); the round's last step takes line 7's exact average
//          instead. k = 0: no averaging inside a round (the paper's Algorithm 1 with local SGD).
//   sgp    Stochastic Gradient Push (comm/algorithms/sgp.h, held by composition): every base
//          step is an SGP step, a push-sum gossip on the directed exponential graph (every
//          sgp.interval steps), the arena holding the de-biased z_i = x_i / w_i. Line 7 is then
//          the push-sum average x_{t,τ} = Σ_i x_i / Σ_i w_i (SgpStrategy::push_sum_average, one
//          allreduce of (x_i, w_i)), in place of the round's last gossip, which would not change
//          it (gossip preserves Σ x and Σ w; fairscale's slowmo_sgp_average_params does the
//          same); afterwards every push-sum weight is 1, so every worker starts round t+1 with
//          x = z = x_{t+1,0}. With w_i = 1 (the exponential graph keeps them at 1) the push-sum
//          average is the plain average of the z_i.
//
// Rounds (the periodic-sync skeleton, comm/algorithms/periodic_sync.h; lines 7-9 are the sync
// step): τ base steps; by default the last step of every epoch also ends a round (so the
// evaluated model is x_{t+1,0}, the same on every rank, as local_sgd and diloco); with
// slowmo.round_spans_epochs a round runs on across the epoch boundary and each epoch's
// consensus evaluation reports the ranks' average (the push-sum average over SGP). The end of
// training (max_steps, or a round spanning the last epoch's end) ends a round in progress. Per
// round: one blocking f32 allreduce of the parameters ("parameter average" on the meter), plus one
// per localsgd average; with node workers these run on the cross communicator (one rank per node,
// the same local rank), and every base step adds a "node gradient average" allreduce on the
// node. With one node (a host without --ranks-per-node) the workers are 1: the base is then
// allreduce SGD on the node, and the slow momentum step still runs every τ steps (fairscale the
// same: it disables LocalSGD when there is no second node). The metrics' state says `workers`. γ_t
// must be > 0 at every average (line 8 divides by it).
//
// Options (fairscale's SlowMoDistributedDataParallel defaults, its default algorithm; the keys,
// their defaults and ranges are declared in slowmo_options.cpp):
//   slowmo.frequency           τ
//   slowmo.lr                  α
//   slowmo.momentum            β (0: no slow momentum)
//   slowmo.base                local or sgp (sgp.interval applies to its gossip)
//   slowmo.localsgd_frequency  k (base local; 0: none)
//   slowmo.node_workers        the ranks of a node form one worker (base local only: true is
//                              refused with sgp)
//   slowmo.round_spans_epochs  true: rounds continue across epoch boundaries
//
// Checkpoints: x_{t,0} of the round in progress ("x_start"), u ("slow_momentum", when β > 0),
// base steps done in the round and rounds so far; with base sgp, SGP's state under "sgp." (its
// push-sum weights, as SgpStrategy saves them); each rank's model and base optimizer are the
// trainer's.
#pragma once
#include <memory>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/periodic_sync.h"
#include "dplab/comm/algorithms/sgp.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// The options' keys, defaults, ranges and help: slowmo_options.cpp; the members start at the
// declared defaults (base local, so node workers).
struct SlowMoOptions {
  int64_t frequency = slowmo_option_table().default_int("slowmo.frequency");  // τ
  double lr = slowmo_option_table().default_double("slowmo.lr");              // α
  double momentum = slowmo_option_table().default_double("slowmo.momentum");  // β
  bool sgp_base = slowmo_option_table().default_string("slowmo.base") == "sgp";
  // k: base averages inside a round (0: none)
  int64_t localsgd_frequency = slowmo_option_table().default_int("slowmo.localsgd_frequency");
  // the ranks of a node form one worker (base local); slowmo.node_workers' declared default is
  // computed (true with base local)
  bool node_workers = !sgp_base;
  bool round_spans_epochs = slowmo_option_table().default_bool("slowmo.round_spans_epochs");
  static SlowMoOptions from_options(const Options& opt);
};

class SlowMoStrategy : public PeriodicSyncStrategy {
 public:
  SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "slowmo"; }
  // Goes on with the live workers (docs/virtual_cluster.md, "Failures"): the workers' averages
  // (over SGP: its gossip and push-sum average) are over them, every rank takes the same slow step.
  bool continues_after_failure() const override { return true; }
  void set_down_ranks(const std::vector<int>& down) override {
    PeriodicSyncStrategy::set_down_ranks(down);
    if (sgp_) sgp_->set_down_ranks(down);
  }
  // Node workers: the node's gradient average is over its live ranks.
  float loss_weight() const override {
    return node_workers() ? node_live_weight() : PeriodicSyncStrategy::loss_weight();
  }
  void setup(TrainContext& ctx) override;
  void after_backward(const StepInfo& step) override;
  void drain() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // Rounds spanning epochs: over SGP, SGP's push-sum consensus; otherwise the skeleton's.
  bool consensus_eval(const std::function<void()>& evaluate) override;

  const SlowMoOptions& options() const { return opt_; }
  const Tensor& x_start() const { return x_start_; }
  const Tensor& slow_momentum() const { return u_; }
  // The SGP base (slowmo.base = sgp), null otherwise; tests set its push-sum weights.
  SgpStrategy* sgp() { return sgp_.get(); }
  // m: the nodes (node workers) or the ranks.
  int workers() const;

 protected:
  void sync(RoundEnd) override;  // lines 7-9
  // SGP base: the base step's gossip, unless the round ends (the push-sum average replaces it).
  void inner_step(const StepInfo& step, bool round_ends) override;
  // SGP base: SGP's setup broadcasts rank 0's model.
  bool broadcast_at_setup() const override { return !sgp_; }
  // Node workers: a returning rank's node state is held by its node's live ranks.
  int heal_source(int r, int peer) const override {
    const int q = node_workers() ? live_node_peer(r) : -1;
    return q >= 0 ? q : peer;
  }
  void save_sync_state(StateDict& out) const override;
  void load_sync_state(const StateDict& in, const RoundPosition& at) override;

 private:
  SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt, const SlowMoOptions& o);
  bool node_workers() const;  // node workers with more than one rank per node
  void average_workers();     // the parameters' average over the workers
  SlowMoOptions opt_;
  Tensor x_start_;                    // x_{t,0}
  Tensor u_;                          // u_t (undefined when β = 0)
  Tensor g_;                          // scratch: (x_{t,0} − x_{t,τ}) / γ_t
  std::unique_ptr<SgpStrategy> sgp_;  // the base algorithm when slowmo.base = sgp
};

std::unique_ptr<Strategy> make_slowmo_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of slowmo continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy slowmo_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
