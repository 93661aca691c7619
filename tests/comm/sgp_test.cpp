// Stochastic Gradient Push (ALGORITHMS.md §5, Crossover-SGD's baseline): the directed
// exponential graph, one gossip against a serial computation, push-sum weights (sum = n,
// de-biased parameters reach Σx/Σw from unequal weights), the optimizer step applied to the
// numerator x when w != 1, and the consensus model.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/algorithms/sgp.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

float value(int r, int64_t i) {
  return float((r * 37 + i * 11) % 64) / 8.0f;
}

struct Pusher {
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  std::unique_ptr<SgpStrategy> strategy;
  TrainContext ctx;
  Options opt;
  explicit Pusher(std::shared_ptr<Topology> topo, double lr = 0.1) {
    std::vector<NamedTensor> v = {{"a.weight", Tensor::zeros({30})},
                                  {"b.weight", Tensor::zeros({13})}};
    arena = std::make_unique<ParamArena>(v);
    SGDOptions so;
    so.lr = lr;
    sgd = std::make_unique<SGD>(*arena, so);
    strategy = std::make_unique<SgpStrategy>(topo, opt);
    ctx.arena = arena.get();
    ctx.optimizer = sgd.get();
    ctx.options = &opt;
    strategy->setup(ctx);
    float* p = arena->params().data<float>();
    for (int64_t i = 0; i < arena->numel(); ++i) p[i] = value(topo->world().rank(), i);
  }
};

std::shared_ptr<Topology> world_topology() {
  Options o;
  return std::make_shared<Topology>(Topology::from_options(o));
}

// Unequal push-sum weights summing to n, exact in f32.
float start_weight(int r, int n) {
  return 1.0f + 0.25f * (float(r) - float(n - 1) / 2.0f) / float(n);
}

TEST(Sgp, ExponentialGraphHops) {
  EXPECT_EQ(exponential_hops(2), (std::vector<int>{1}));
  EXPECT_EQ(exponential_hops(3), (std::vector<int>{1, 2}));
  EXPECT_EQ(exponential_hops(5), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(exponential_hops(8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(exponential_hops(9), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_TRUE(exponential_hops(1).empty());
}

TEST(Sgp, OneGossipMatchesSerialUniformMixing) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Pusher p(topo);
  const auto hops = exponential_hops(n);
  for (int64_t round = 0; round < 3; ++round) {
    float* z = p.arena->params().data<float>();
    for (int64_t i = 0; i < p.arena->numel(); ++i) z[i] = value(me, i);
    p.strategy->gossip(round);
    const int h = hops[size_t(round % int64_t(hops.size()))];
    const int src = ((me - h) % n + n) % n;  // rank me - 2^k sends to me
    int64_t bad = 0;
    for (int64_t i = 0; i < p.arena->numel(); ++i)
      bad += z[i] != (value(me, i) + value(src, i)) * 0.5f;
    EXPECT_EQ(bad, 0) << "round " << round << " hop " << h;
    EXPECT_EQ(p.strategy->push_sum_weight(), 1.0f);  // regular graph: w stays 1
  }
  const CommStats s = p.strategy->take_stats();
  EXPECT_EQ(s.collectives, 1 + 3);
}

TEST(Sgp, PushSumWeightsStayConsistentAndDebiasedParametersConverge) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Pusher p(topo);
  p.strategy->set_push_sum_weight(start_weight(me, n));
  // Target: Σ_r x_r / Σ_r w_r with x_r = w_r z_r, Σ w_r = n.
  std::vector<double> target(size_t(p.arena->numel()), 0.0);
  double wsum0 = 0;
  for (int r = 0; r < n; ++r) wsum0 += start_weight(r, n);
  ASSERT_NEAR(wsum0, n, 1e-6);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < p.arena->numel(); ++i)
      target[size_t(i)] += start_weight(r, n) * value(r, i) / wsum0;
  for (int64_t round = 0; round < 60; ++round) {
    p.strategy->gossip(round);
    Tensor w = Tensor::full({1}, p.strategy->push_sum_weight());
    topo->world().allreduce(w, ReduceOp::sum);
    ASSERT_NEAR(w.item(), double(n), 1e-5) << "round " << round;
  }
  const float* z = p.arena->params().data<float>();
  double worst = 0;
  for (int64_t i = 0; i < p.arena->numel(); ++i)
    worst = std::max(worst, std::abs(z[i] - target[size_t(i)]));
  EXPECT_LT(worst, 1e-4);
  // Equal weights from here on: the weights themselves converged to 1.
  EXPECT_NEAR(p.strategy->push_sum_weight(), 1.0, 1e-4);
}

TEST(Sgp, StepIsAppliedToTheNumeratorWhenWeightsDiffer) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  const double lr = 0.5;
  Pusher p(topo, lr);
  p.strategy->set_push_sum_weight(start_weight(me, n));
  // The optimizer updates tensors only, not the arena's alignment padding: zero gradient there.
  std::vector<char> in_tensor(size_t(p.arena->numel()), 0);
  for (auto& seg : p.arena->segments())
    for (int64_t i = seg.offset; i < seg.offset + seg.numel; ++i) in_tensor[size_t(i)] = 1;
  auto grad = [&](int r, int64_t i) {
    return in_tensor[size_t(i)] ? float((r + 2 * i) % 5) - 2.0f : 0.0f;
  };
  StepInfo st;
  st.global_step = 1;  // hop exponential_hops(n)[1 mod L]
  p.sgd->zero_grad();
  float* g = p.arena->grads().data<float>();
  for (int64_t i = 0; i < p.arena->numel(); ++i) g[i] = grad(me, i);
  p.strategy->after_backward(st);
  p.sgd->step();
  p.strategy->after_step(st);
  // Serial push-sum: x_half_r = w_r z_r - lr g_r; z = (x_half_me + x_half_src) / (w_me + w_src).
  const auto hops = exponential_hops(n);
  const int h = hops[1 % hops.size()];
  const int src = ((me - h) % n + n) % n;
  const float* z = p.arena->params().data<float>();
  double worst = 0;
  for (int64_t i = 0; i < p.arena->numel(); ++i) {
    const double xm = double(start_weight(me, n)) * value(me, i) - lr * grad(me, i);
    const double xs = double(start_weight(src, n)) * value(src, i) - lr * grad(src, i);
    const double e = (xm + xs) / (double(start_weight(me, n)) + start_weight(src, n));
    worst = std::max(worst, std::abs(z[i] - e));
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_NEAR(p.strategy->push_sum_weight(), (start_weight(me, n) + start_weight(src, n)) / 2,
              1e-7);
}

TEST(Sgp, ConsensusIsWeightedMeanAndRestores) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Pusher p(topo);
  p.strategy->set_push_sum_weight(start_weight(me, n));
  double worst = 0;
  EXPECT_TRUE(p.strategy->consensus_eval([&] {
    const float* z = p.arena->params().data<float>();
    for (int64_t i = 0; i < p.arena->numel(); ++i) {
      double num = 0, den = 0;
      for (int r = 0; r < n; ++r) {
        num += double(start_weight(r, n)) * value(r, i);
        den += start_weight(r, n);
      }
      worst = std::max(worst, std::abs(z[i] - num / den));
    }
  }));
  EXPECT_LT(worst, 1e-5);
  const float* z = p.arena->params().data<float>();
  for (int64_t i = 0; i < p.arena->numel(); ++i) ASSERT_EQ(z[i], value(me, i));
}

TEST(Sgp, RegistryBuildsIt) {
  Options o;
  o.set("algo", "sgp");
  EXPECT_EQ(make_strategy(o)->name(), "sgp");
}

}  // namespace
}  // namespace dplab
