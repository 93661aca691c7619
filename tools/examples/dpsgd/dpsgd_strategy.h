// D-PSGD, decentralised parallel SGD (Lian et al., "Can Decentralized Algorithms Outperform
// Centralized Algorithms? A Case Study for Decentralized Parallel Stochastic Gradient Descent",
// NeurIPS 2017), Algorithm 1, on a ring, written outside the library against its communication
// meter (docs/extension_api.md, "Writing an algorithm"):
//
//   for k = 0, 1, ...  on worker i, in parallel:
//     line 3   g_i = ∇F_i(x_{k,i}; ξ_{k,i})                       forward, backward (the loop)
//     line 4   fetch the neighbours' x_{k,j}                         ┐ overlapped: posted when
//     line 5   x_{k+1/2,i} = Σ_j W_ij x_{k,j}                        ┘ x_k exists (end of step k-1)
//     line 6   x_{k+1,i} = x_{k+1/2,i} − γ g_i                       the optimizer's step
//
// W is the ring's: worker i mixes itself and its distinct neighbours i−1, i+1 (mod P) with
// equal weights (1/3 each for P >= 3, 1/2 for P = 2). The exchange of x_k is posted at the end
// of step k−1 (after_step, from a copy of x_k) and completed after step k's backward, so it
// runs across the step boundary while step k computes its gradient at x_k: exactly line 3's
// point, and the paper's "compute and communicate in parallel". With plain SGD (momentum 0) the
// run is Algorithm 1; with momentum the optimizer's step replaces line 6 (a common variant).
//
// What the example shows (issue #32 item 8):
//   - an overlapped exchange across steps: meter().isend/irecv joined into one Pending, posted
//     in after_step and completed in the next after_backward (metered: "dpsgd exchange" comm
//     event for the whole flight, "wait dpsgd exchange" for the part compute waited);
//   - its own option keys (dpsgd.weight_self: W_ii, the rest shared equally by the neighbours),
//     read once in the factory (main.cpp) and listed in the registry entry;
//   - consensus evaluation: each rank holds its own model, so consensus_eval averages the
//     models over the ranks ("consensus average"), evaluates, and restores;
//   - safe message tags: the algorithm's world is a communicator of its own (the driver builds
//     the Topology for the strategy alone; evaluation and the step agreement use others), so any
//     tag in [0, 32767] (MPI guarantees MPI_TAG_UB >= 32767) is free unless the strategy embeds
//     a built-in one on the same topology: crossover uses 0x4300 + segment, sgp 0x5350.
//   - checkpoints: the exchange in flight at a save is waited for (not applied) and the
//     neighbours' copies saved, so a resumed run is bitwise the uninterrupted one.
// CPU or CUDA arenas (all tensor work goes through Tensor ops).
#pragma once
#include <set>
#include <utility>
#include <vector>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

class DpsgdStrategy : public DistributedStrategy {
 public:
  // `weight_self`: W_ii (0: the ring's equal weights).
  DpsgdStrategy(std::shared_ptr<Topology> topo, double weight_self)
      : DistributedStrategy(std::move(topo)), weight_self_(weight_self) {
    DPLAB_CHECK(weight_self >= 0 && weight_self < 1,
                "option dpsgd.weight_self: expected [0, 1), got {}", weight_self);
    const int P = world_size(), r = rank();
    for (int j : {(r + P - 1) % P, (r + 1) % P})
      if (j != r && std::find(peers_.begin(), peers_.end(), j) == peers_.end()) peers_.push_back(j);
    if (weight_self_ == 0) weight_self_ = 1.0 / double(peers_.size() + 1);
  }
  std::string name() const override { return "dpsgd"; }

  void setup(TrainContext& ctx) override {
    DistributedStrategy::setup(ctx);  // x_0: rank 0's model on every rank
    sent_ = ctx.arena->params().clone();
    for (size_t q = 0; q < peers_.size(); ++q) received_.push_back(sent_.clone());
  }

  // Lines 4-5 for step k: x_{k+1/2} = W_ii x_k + Σ_j W_ij x_{k,j}, before the optimizer's line 6.
  void after_backward(const StepInfo&) override {
    if (peers_.empty() || !posted_) return;  // step 0: x_0 is the same on every rank
    meter().complete(exchange_);
    posted_ = false;
    NoGradGuard no_grad;
    Tensor x = ctx_.arena->params();
    const float w_peer = float((1.0 - weight_self_) / double(peers_.size()));
    mul_(x, float(weight_self_));
    for (const Tensor& xj : received_) add_(x, xj, w_peer);
  }

  // Line 4 for step k+1, posted as soon as x_{k+1} exists: overlaps step k+1's gradient.
  void after_step(const StepInfo&) override {
    if (peers_.empty()) return;
    sent_.copy_(ctx_.arena->params());
    for (size_t q = 0; q < peers_.size(); ++q) {
      exchange_.join(meter().isend(world(), "dpsgd exchange", sent_, peers_[q], kTag));
      exchange_.join(meter().irecv(world(), "dpsgd exchange", received_[q], peers_[q], kTag));
    }
    posted_ = true;
  }

  // Nothing may stay in flight: the exchange is completed, not applied (after_backward does).
  void drain() override {
    meter().complete(exchange_);
    average_buffers();
  }

  bool consensus_eval(const std::function<void()>& evaluate) override {
    if (world_size() < 2) return false;
    Tensor x = ctx_.arena->params();
    const Tensor saved = x.clone();
    meter().allreduce(world(), "consensus average", x, ReduceOp::average);
    evaluate();
    x.copy_(saved);
    return true;
  }

  std::map<std::string, double> state() const override {
    return {{"peers", double(peers_.size())}, {"weight_self", weight_self_}};
  }

 protected:
  void save_algorithm_state(StateDict& out) const override {
    meter_unconst().complete(exchange_);  // waited for, not applied
    out.put_int("posted", posted_ ? 1 : 0);
    for (size_t q = 0; q < received_.size(); ++q)
      out.put_tensor("received." + std::to_string(q), received_[q].clone());
  }
  void load_algorithm_state(const StateDict& in) override {
    posted_ = state_int(in, name(), "posted", 0, 1) == 1;
    for (size_t q = 0; q < received_.size(); ++q)
      restore_tensor(in, name(), "received." + std::to_string(q), received_[q]);
  }

 private:
  static constexpr int kTag = 0x4450;  // "DP": clear of the built-ins' tags
  CommMeter& meter_unconst() const { return const_cast<DpsgdStrategy*>(this)->meter(); }

  double weight_self_;
  std::vector<int> peers_;        // distinct ring neighbours
  Tensor sent_;                   // x_k as sent (the arena changes under the exchange)
  std::vector<Tensor> received_;  // the neighbours' x_k, one per peer
  mutable Pending exchange_;
  bool posted_ = false;  // an exchange of x_k is posted or received but not yet mixed in
};

}  // namespace dplab
