// Stochastic Gradient Push (Assran et al. 2019), the gossip baseline of Crossover-SGD
// (ALGORITHMS.md §5; notes papers/notes/crossover-sgd.md §1.5).
//
// Each rank keeps the push-sum numerator x_i, a push-sum weight w_i (initially 1) and the
// de-biased parameters z_i = x_i / w_i. The arena holds z (forward and backward run at z, and
// it is the evaluated model); x = w·z is implicit. Every iteration, with hop h_k = 2^(k mod L),
// L = floor(log2(n-1)) + 1 (the directed exponential graph, one peer per iteration):
//   x_i^{k+1/2} = x_i^k - U(∇F(z_i^k))          (the loop's optimizer step, applied to x)
//   send (x_i^{k+1/2}, w_i^k) to rank i + h_k mod n; receive from rank i - h_k mod n
//   x_i^{k+1} = (x_i^{k+1/2} + x_j^{k+1/2}) / 2,  w_i^{k+1} = (w_i^k + w_j^k) / 2   (uniform 1/2)
//   z_i^{k+1} = x_i^{k+1} / w_i^{k+1}
// The mixing matrix is column stochastic, so Σ_i w_i = n and Σ_i x_i are preserved. On this
// graph every rank receives exactly once per iteration, so w stays 1 (the reference code skips
// sending it); dplab sends it anyway (one float appended to the message) so the push-sum
// arithmetic is exercised and holds for any starting weights.
// With w = 1 the optimizer step on z is exactly the step on x; otherwise x^{k+1/2} is formed as
// w·z^k + (z^{k+1/2} - z^k) from a snapshot taken before the step.
// On a device nothing of a step goes back to the host: the de-biasing divides by the received
// weight on the device, and the host knows w (for that branch and the scalars) because every
// rank tracks every rank's weight, gathered once at the first gossip.
//
// Evaluated model: rank 0's z; consensus_eval() offers Σ_i x_i / Σ_i w_i.
//
// Options ("sgp." prefix): interval I (gossip every I-th step, local steps between); its default
// and range are declared in sgp_options.cpp. The communicator options (ranks_per_node,
// link.intra, link.inter, comm.*) apply. accumulate_steps stays refused: the loop calls
// after_step once per micro-batch, so a gossip would mix parameters in the middle of an
// accumulation group; sgp.interval is the way to communicate less often.
#pragma once
#include <memory>

#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// The hops of the directed exponential graph on n ranks: 1, 2, 4, ..., 2^floor(log2(n-1)).
std::vector<int> exponential_hops(int n);
// The reference's phone book as forward offsets in [1, n): +h, n-h for each hop h (see above).
std::vector<int> sgp_phone_book(int n);
struct SgpPeers {
  int dst = 0, src = 0, offset = 0;  // rank sends to dst and receives from src
};
// Gossip round `round` of rank `rank` on n >= 2 ranks.
SgpPeers sgp_peers(int n, int rank, int64_t round);

class SgpStrategy : public DistributedStrategy {
 public:
  SgpStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "sgp"; }
  // Goes on with the live ranks: the gossip runs on the exponential graph of the live ranks
  // (docs/virtual_cluster.md, "Failures"); a down rank gossips nowhere.
  bool continues_after_failure() const override { return true; }
  void setup(TrainContext& ctx) override;
  void after_backward(const StepInfo& step) override;
  void after_step(const StepInfo& step) override;
  std::map<std::string, double> state() const override;
  bool consensus_eval(const std::function<void()>& evaluate) override;

  // One push-sum gossip with peers sgp_peers(n, rank, round); public for tests.
  void gossip(int64_t round);
  // The exact push-sum average, in place of this step's gossip (SlowMo's line 7 with SGP as its
  // base, comm/algorithms/slowmo.h): x_i^{k+1/2} is formed as a gossip would (so the step just
  // taken counts), one blocking allreduce sums (x_i, w_i) over all ranks, and every rank's z
  // becomes Σ_i x_i / Σ_i w_i, the value the gossip converges to (Σ x and Σ w are what gossip
  // preserves). Then every push-sum weight is reset to 1, so x = z again on every rank.
  void push_sum_average();
  float push_sum_weight() const { return w_; }
  // Sets w keeping z (so x = w·z changes): tests start from unequal weights. Only before the
  // first gossip: that round gathers every rank's weight once, and each rank then tracks all of
  // them (the mixing rule is deterministic), so no step reads a weight back from the device.
  void set_push_sum_weight(float w);

 protected:
  // Checkpoints. Saved: this rank's push-sum weight w and the weights of all ranks it tracks
  // (empty before the first gossip), the round count and last hop (metrics). z (the arena) and
  // the momentum are the trainer's; x = w·z needs nothing more. Not saved: the hop of a round
  // (a function of the global step), the send/receive buffers and the pre-step snapshot (both
  // live within one iteration).
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  // send_[0, numel) = x^{k+1/2} = w·z (or w·z^k + (z − z^k) after a step taken at w != 1),
  // send_[numel] = w; clears the pre-step snapshot.
  void form_numerator();
  std::vector<int> book_;  // sgp_phone_book(n)
  int64_t interval_ = 1;   // sgp.interval
  float w_ = 1.0f;
  std::vector<float> weights_;  // every rank's w (empty until the first gossip)
  Tensor before_;               // z before the optimizer step (only while w != 1)
  bool have_before_ = false;
  Tensor send_, recv_;  // [numel + 1]: x, then w
  int64_t rounds_ = 0;
  int last_hop_ = 0;
};

std::unique_ptr<Strategy> make_sgp_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of sgp continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy sgp_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
