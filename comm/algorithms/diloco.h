// DiLoCo, distributed low-communication training (Douillard et al., "DiLoCo: Distributed
// Low-Communication Training of Language Models", 2023, arXiv:2311.08105), Algorithm 1:
//
//   Require: initial model θ(0); k workers; data shards D_i; InnerOpt, OuterOpt
//   1  for outer step t = 1 … T:
//   2    for worker i = 1 … k (in parallel):
//   3      θ_i(t) ← θ(t−1)                                 replicas restart from the global model
//   4      for inner step h = 1 … H:
//   5-8      x ∼ D_i;  θ_i(t) ← InnerOpt(θ_i(t), ∇f(x, θ_i(t)))
//   11     δ_i(t) = θ(t−1) − θ_i(t)                        the outer gradient of worker i
//   13   Δ(t) = (1/k) Σ_i δ_i(t)                           one allreduce (average)
//   15   θ(t) ← OuterOpt(θ(t−1), Δ(t))
//
// Mapping onto dplab: each rank is one worker (replica), k = world size, its data shard the
// rank's part of the sampler. (torchft's DiLoCo runs one replica per replica group, each
// possibly several ranks under DDP; dplab offers the simplest faithful mapping, one rank per
// replica.) InnerOpt is the run's optimizer (`optim`: sgd, lars or adamw; the paper's is AdamW),
// stepped by the training loop; its state (momentum, Adam moments) stays local and persists
// across rounds, as in the paper. OuterOpt (diloco.outer_optim) acts on the flat parameter
// vector with Δ(t) as its gradient:
//
//   nesterov (default; the paper's choice, lr 0.7, momentum 0.9) and sgd: PyTorch's SGD rule
//     b ← μ b + Δ   (b = Δ at the first outer step)      d = Δ + μ b (nesterov)  |  d = b (sgd)
//     θ ← θ − η_outer d
//   computed by the same fused SGD kernel as the inner SGD (core/optim_functors.h, no weight
//   decay, no dampening). μ = 0 gives plain outer SGD (d = Δ); then η_outer = 1 makes θ(t) the
//   average of the θ_i(t), i.e. local SGD (parameter averaging every H steps).
//   adam (the paper ablates Adam as OuterOpt): torch.optim.Adam at outer step t = 1, 2, ...
//     m ← β1 m + (1 − β1) Δ     v ← β2 v + (1 − β2) Δ²
//     θ ← θ − η_outer / (1 − β1^t) · m / (√v / √(1 − β2^t) + ε)
//   with PyTorch's defaults (η_outer 1e-3, β 0.9/0.999, ε 1e-8) unless set, no weight decay:
//   the AdamW kernel of the inner AdamW (core/optim_functors.h) at weight decay 0, which is
//   Adam.
//
// Rounds (the periodic-sync skeleton, comm/algorithms/periodic_sync.h; the outer step is the
// sync step): a round is H inner steps; by default the last step of every epoch also ends a
// round (so the evaluated model is θ(t), the same on every rank, and every epoch ends
// synchronised, as in local_sgd); with diloco.round_spans_epochs a round runs on across the
// epoch boundary and each epoch's run's model (test_acc) is θ(t−1), the global model, with rank
// 0's own local model beside it (test_acc_rank0). The end of
// training (max_steps, or a round spanning the last epoch's end) ends a round in progress. The
// outer gradient travels in f32, one blocking allreduce of the whole parameter vector per
// round ("outer gradient" on the meter).
//
// Options:
//   diloco.H                50    inner steps per round (the paper's 500 is for language
//                                 models trained for 88k steps; this project's models run a
//                                 few hundred steps per epoch, and the paper's ablation shows
//                                 quality improving as H shrinks, so 50, the smallest H it
//                                 studies, gives several outer steps per epoch)
//   diloco.outer_optim            nesterov  nesterov | sgd | adam
//   diloco.outer_lr               0.7   η_outer (adam: 0.001, PyTorch's)
//   diloco.outer_momentum         0.9   μ of nesterov and sgd (0: plain SGD)
//   diloco.outer_beta1, outer_beta2, outer_eps   0.9, 0.999, 1e-8   adam's (PyTorch's)
//   An option of another outer optimizer than the chosen one is refused, not ignored.
//   diloco.round_spans_epochs     false true: rounds continue across epoch boundaries
//
// Checkpoints: θ(t−1) of the round in progress ("theta_global"), the outer momentum buffer
// ("outer_momentum", when μ > 0) or Adam's moments ("outer_exp_avg", "outer_exp_avg_sq"; Adam's
// step t is the outer step count), inner steps done in the round and outer steps so far; the
// local model and the inner optimizer are the trainer's. Memory: two (one with μ = 0, three
// with adam) extra copies of the parameters plus a scratch one for Δ.
#pragma once
#include <memory>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/periodic_sync.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

enum class DiLoCoOuterOptim { sgd, nesterov, adam };
// The outer optimizer option diloco.outer_optim names (nesterov, sgd or adam; a checked value).
inline DiLoCoOuterOptim diloco_outer_optim(const std::string& name) {
  return name == "adam"  ? DiLoCoOuterOptim::adam
         : name == "sgd" ? DiLoCoOuterOptim::sgd
                         : DiLoCoOuterOptim::nesterov;
}

// The options' keys, defaults, ranges and help: diloco_options.cpp; the members start at the
// declared defaults (nesterov's outer lr).
struct DiLoCoOptions {
  int64_t H = diloco_option_table().default_int("diloco.H");
  DiLoCoOuterOptim outer_optim =
      diloco_outer_optim(diloco_option_table().default_string("diloco.outer_optim"));
  double outer_lr = diloco_option_table().default_double("diloco.outer_lr");  // adam: 1e-3
  double outer_momentum = diloco_option_table().default_double("diloco.outer_momentum");
  double outer_beta1 = diloco_option_table().default_double("diloco.outer_beta1");  // adam
  double outer_beta2 = diloco_option_table().default_double("diloco.outer_beta2");
  double outer_eps = diloco_option_table().default_double("diloco.outer_eps");
  bool round_spans_epochs = diloco_option_table().default_bool("diloco.round_spans_epochs");
  static DiLoCoOptions from_options(const Options& opt);
};

class DiLoCoStrategy : public PeriodicSyncStrategy {
 public:
  DiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "diloco"; }
  // DiLoCo goes on with the live workers: the outer gradient is their mean, and every rank (a
  // down one too) applies the same outer step, so θ and the outer optimizer's state stay alike.
  bool continues_after_failure() const override { return true; }
  void setup(TrainContext& ctx) override;
  void drain() override;
  std::map<std::string, double> state() const override;

  const DiLoCoOptions& options() const { return opt_; }
  int64_t outer_steps() const { return rounds(); }
  int64_t inner_steps() const { return steps_in_round(); }
  const Tensor& theta_global() const { return theta_; }

 protected:
  void sync(RoundEnd) override;  // the outer step: lines 11-15 and line 3 of the next round
  const Tensor* global_model() const override { return &theta_; }  // the run's model: θ(t−1)
  void save_sync_state(StateDict& out) const override;
  void load_sync_state(const StateDict& in, const RoundPosition& at) override;

 private:
  DiLoCoStrategy(std::shared_ptr<Topology> topo, const DiLoCoOptions& o);
  DiLoCoOptions opt_;
  Tensor theta_;                 // θ(t−1): the global model the round started from
  Tensor momentum_;              // the outer SGD's buffer b (undefined when μ = 0 or with adam)
  Tensor exp_avg_, exp_avg_sq_;  // the outer Adam's m and v (undefined unless adam)
  Tensor delta_;                 // scratch: δ_i, then Δ after the allreduce
};

std::unique_ptr<Strategy> make_diloco_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of diloco continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy diloco_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
