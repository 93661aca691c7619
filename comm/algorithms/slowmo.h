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
// m = the world size (each rank a worker); the base optimizer is the run's optimizer, stepped by
// the training loop on the rank's own batches; γ_t is its learning rate at the exact average (the
// lr schedule's value then, as fairscale reads param_groups' lr at the SlowMo step). Line 3:
// the base optimizer's buffers (momentum, Adam moments) are maintained: they stay local, neither
// reset nor averaged. Lines 8-9 are the SGD heavy-ball step (PyTorch's rule, no Nesterov) on
// the gradient (x_{t,0} − x_{t,τ}) / γ_t with learning rate α γ_t, run by the fused SGD kernel
// (u_0 = 0 makes its first step u_1 = g exactly). With α = 1 and β = 0, x_{t+1,0} is the average
// (to rounding): local SGD with period τ.
//
// Base algorithm (slowmo.base):
//   local  local SGD: the base steps alone, no communication inside a round.
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
// training (max_steps, or a round spanning the last epoch's end) ends a round in progress. One
// blocking f32 allreduce of the parameters per round ("parameter average" on the meter). γ_t
// must be > 0 at every average (line 8 divides by it).
//
// Options (fairscale's SlowMoDistributedDataParallel defaults):
//   slowmo.frequency   48    τ
//   slowmo.lr          1     α
//   slowmo.momentum    0.5   β (0: no slow momentum)
//   slowmo.base        local local or sgp (sgp.interval applies to its gossip)
//   slowmo.round_spans_epochs  false  true: rounds continue across epoch boundaries
// (fairscale's base local SGD may also average every localsgd_frequency steps inside a round;
// here the base steps alone, the paper's Algorithm 1 with local SGD.)
//
// Checkpoints: x_{t,0} of the round in progress ("x_start"), u ("slow_momentum", when β > 0),
// base steps done in the round and rounds so far; with base sgp, SGP's state under "sgp." (its
// push-sum weights, as SgpStrategy saves them); each rank's model and base optimizer are the
// trainer's.
#pragma once
#include <memory>

#include "dplab/comm/algorithms/periodic_sync.h"
#include "dplab/comm/algorithms/sgp.h"

namespace dplab {

struct SlowMoOptions {
  int64_t frequency = 48;  // τ
  double lr = 1.0;         // α
  double momentum = 0.5;   // β
  bool sgp_base = false;   // slowmo.base = sgp
  bool round_spans_epochs = false;
  static SlowMoOptions from_options(const Options& opt);
};

class SlowMoStrategy : public PeriodicSyncStrategy {
 public:
  SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "slowmo"; }
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

 protected:
  void sync(RoundEnd) override;  // lines 7-9
  // SGP base: the base step's gossip, unless the round ends (the push-sum average replaces it).
  void inner_step(const StepInfo& step, bool round_ends) override;
  // SGP base: SGP's setup broadcasts rank 0's model.
  bool broadcast_at_setup() const override { return !sgp_; }
  void save_sync_state(StateDict& out) const override;
  void load_sync_state(const StateDict& in, const RoundPosition& at) override;

 private:
  SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt, const SlowMoOptions& o);
  SlowMoOptions opt_;
  Tensor x_start_;                    // x_{t,0}
  Tensor u_;                          // u_t (undefined when β = 0)
  Tensor g_;                          // scratch: (x_{t,0} − x_{t,τ}) / γ_t
  std::unique_ptr<SgpStrategy> sgp_;  // the base algorithm when slowmo.base = sgp
};

std::unique_ptr<Strategy> make_slowmo_strategy(std::shared_ptr<Topology> topo, const Options& opt);

}  // namespace dplab
