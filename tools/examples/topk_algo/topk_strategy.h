// Top-k sparsified gradient averaging with error feedback (Stich et al. 2018, "Sparsified SGD
// with memory"; GRACE's TopKCompressor; not DGC: no momentum correction or masking),
// written outside the library with the tools the built-in algorithms use: DistributedStrategy
// (rank, world, the start-up broadcast, buffer averaging, checkpoint naming), the communication
// meter for the sparse payloads (an allgather: GRACE's choice, since the ranks' index sets
// differ, a sparse payload cannot be summed by an allreduce; the meter counts it, traces it as
// "topk gather" and gives its wire bytes, (P-1) b per rank), StateDict for checkpoints.
//
// Per step, on each rank, with residual r (zero at the start) and the flat gradient g:
//   g' = g + r;  S = the k = max(1, ratio * n) indices of largest |g'| (ties: lower index);
//   sent = g' on S, 0 elsewhere;  r = g' - sent;
//   g = (sum over ranks, in rank order, of sent) / world_size.
// Every rank computes the same g, so ranks that start from rank 0's parameters stay identical.
// CPU arenas only (the index scatter runs on the host).
#pragma once
#include <algorithm>
#include <numeric>
#include <utility>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/distributed_strategy.h"

namespace dplab {

class TopKStrategy : public DistributedStrategy {
 public:
  TopKStrategy(std::shared_ptr<Topology> topo, double ratio)
      : DistributedStrategy(std::move(topo)), ratio_(ratio) {
    DPLAB_CHECK(ratio > 0 && ratio <= 1, "option topk.ratio: expected (0, 1], got {}", ratio);
  }
  std::string name() const override { return "topk"; }

  void setup(TrainContext& ctx) override {
    DistributedStrategy::setup(ctx);  // rank 0's model on every rank
    DPLAB_CHECK(ctx.arena->device().is_cpu(), "topk: CPU parameters only, got {}",
                ctx.arena->device().str());
    const int64_t n = ctx.arena->numel();
    residual_ = Tensor::zeros({n});
    k_ = std::clamp<int64_t>(int64_t(ratio_ * double(n)), 1, n);
  }

  void after_backward(const StepInfo&) override {
    const int64_t n = ctx_.arena->numel(), ranks = world_size();
    float* g = ctx_.arena->grads().data<float>();
    float* r = residual_.data<float>();
    for (int64_t i = 0; i < n; ++i) r[i] += g[i];  // r now holds g' = g + r
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto larger = [r](int32_t a, int32_t b) {
      return std::abs(r[a]) > std::abs(r[b]) || (std::abs(r[a]) == std::abs(r[b]) && a < b);
    };
    std::nth_element(order.begin(), order.begin() + k_, order.end(), larger);
    Tensor idx = Tensor::empty({k_}, DType::i32), val = Tensor::empty({k_});
    int32_t* pi = idx.data<int32_t>();
    float* pv = val.data<float>();
    for (int64_t j = 0; j < k_; ++j) {
      pi[j] = order[size_t(j)];
      pv[j] = r[pi[j]];
      r[pi[j]] = 0;  // r = g' - sent
    }
    Tensor all_idx = Tensor::empty({ranks * k_}, DType::i32), all_val = Tensor::empty({ranks * k_});
    // One operation of two allgathers (indices, values), the host reads the result.
    Pending p = meter().iallgather(world(), "topk gather", idx, all_idx);
    p.join(meter().iallgather(world(), "topk gather", val, all_val));
    meter().complete_blocking(p, Use::host);
    std::fill(g, g + n, 0.f);
    const int32_t* ai = all_idx.data<int32_t>();
    const float* av = all_val.data<float>();
    for (int64_t j = 0; j < ranks * k_; ++j) g[ai[j]] += av[j];  // rank order: rank 0's block first
    for (int64_t i = 0; i < n; ++i) g[i] /= float(ranks);
  }

  // BatchNorm running statistics differ per rank: the evaluated model takes their average.
  void drain() override { average_buffers(); }
  std::map<std::string, double> state() const override { return {{"k", double(k_)}}; }
  const Tensor& residual() const { return residual_; }

 protected:
  void save_algorithm_state(StateDict& out) const override {
    out.put_tensor("residual", residual_);
  }
  void load_algorithm_state(const StateDict& in) override {
    restore_tensor(in, name(), "residual", residual_);
  }

 private:
  double ratio_;
  int64_t k_ = 1;
  Tensor residual_;
};

}  // namespace dplab
