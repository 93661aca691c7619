// Top-k sparsified gradient averaging with error feedback (Stich et al. 2018; Lin et al. 2018),
// written outside the library with the tools the built-in algorithms use: Topology for the
// world communicator, the communicator's allgather for the sparse payloads (GRACE's choice:
// the ranks' index sets differ, so a sparse payload cannot be summed by an allreduce),
// CommStats for the metrics, StateDict for checkpoints (comm/algorithms/algo_state.h).
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
#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/stopwatch.h"
#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"

namespace dplab {

class TopKStrategy : public Strategy {
 public:
  TopKStrategy(std::shared_ptr<Topology> topo, double ratio)
      : topo_(std::move(topo)), ratio_(ratio) {
    DPLAB_CHECK(ratio > 0 && ratio <= 1, "option topk.ratio: expected (0, 1], got {}", ratio);
  }
  std::string name() const override { return "topk"; }
  int rank() const override { return topo_->world().rank(); }
  int world_size() const override { return topo_->world().size(); }

  void setup(TrainContext& ctx) override {
    Strategy::setup(ctx);
    DPLAB_CHECK(ctx.arena->device().is_cpu(), "topk: CPU parameters only, got {}",
                ctx.arena->device().str());
    stats_.add(
        broadcast_model(topo_->world(), *ctx.arena, ctx.buffers, 0, ctx.tracer, ctx.time.get()));
    const int64_t n = ctx.arena->numel();
    residual_ = Tensor::zeros({n});
    k_ = std::clamp<int64_t>(int64_t(ratio_ * double(n)), 1, n);
  }

  void after_backward(const StepInfo&) override {
    const int64_t n = ctx_.arena->numel(), world = world_size();
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
    Tensor all_idx = Tensor::empty({world * k_}, DType::i32), all_val = Tensor::empty({world * k_});
    // On the run's time base (virtual under a cluster), as the built-in algorithms measure.
    const Stopwatch sw(*ctx_.time);
    topo_->world().allgather(idx, all_idx);
    topo_->world().allgather(val, all_val);
    const double s = sw.seconds();
    stats_.add({double(idx.nbytes() + val.nbytes()), 2, 0, s, s});
    std::fill(g, g + n, 0.f);
    const int32_t* ai = all_idx.data<int32_t>();
    const float* av = all_val.data<float>();
    for (int64_t j = 0; j < world * k_; ++j) g[ai[j]] += av[j];  // rank order: rank 0's block first
    for (int64_t i = 0; i < n; ++i) g[i] /= float(world);
  }

  // BatchNorm running statistics differ per rank: the evaluated model takes their average.
  void drain() override {
    stats_.add(average_buffers(topo_->world(), ctx_.buffers, ctx_.tracer, ctx_.time.get()));
  }
  CommStats take_stats() override { return std::exchange(stats_, {}); }
  std::map<std::string, double> state() const override { return {{"k", double(k_)}}; }

  void save_state(StateDict& out) const override {
    save_algorithm_name(out, name());
    out.put_tensor("residual", residual_);
  }
  void load_state(const StateDict& in) override {
    check_algorithm_name(in, name());
    restore_tensor(in, name(), "residual", residual_);
  }
  const Tensor& residual() const { return residual_; }

 private:
  std::shared_ptr<Topology> topo_;
  double ratio_;
  int64_t k_ = 1;
  Tensor residual_;
  CommStats stats_;
};

}  // namespace dplab
