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

// The reference's DynamicDirectedExponentialGraph at 8 ranks, written out by hand from its rule
// (for i = 0..floor(log2 7) = 2: peer r + 2^i, then r - 2^i; r + 4 and r - 4 are the same rank
// and the reference keeps both), rotated one entry per gossip starting at entry 0.
TEST(Sgp, PeerScheduleAtEightRanksIsTheReferencePhoneBook) {
  // dst and src of rank 0 and rank 5 in rounds 0..6 (round 6 wraps to entry 0).
  const int dst0[7] = {1, 7, 2, 6, 4, 4, 1};
  const int src0[7] = {7, 1, 6, 2, 4, 4, 7};
  const int dst5[7] = {6, 4, 7, 3, 1, 1, 6};
  const int src5[7] = {4, 6, 3, 7, 1, 1, 4};
  for (int k = 0; k < 7; ++k) {
    EXPECT_EQ(sgp_peers(8, 0, k).dst, dst0[k]) << "round " << k;
    EXPECT_EQ(sgp_peers(8, 0, k).src, src0[k]) << "round " << k;
    EXPECT_EQ(sgp_peers(8, 5, k).dst, dst5[k]) << "round " << k;
    EXPECT_EQ(sgp_peers(8, 5, k).src, src5[k]) << "round " << k;
  }
  EXPECT_EQ(sgp_phone_book(8), (std::vector<int>{1, 7, 2, 6, 4, 4}));
  EXPECT_EQ(sgp_phone_book(2), (std::vector<int>{1, 1}));
  EXPECT_EQ(sgp_phone_book(5), (std::vector<int>{1, 4, 2, 3, 4, 1}));
  // Each round is a permutation: the in-peer of dst is this rank.
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(sgp_peers(8, sgp_peers(8, r, k).dst, k).src, r);
}

// The forward-only hops 1, 2, 4 made 8 ranks reach the exact average every 3 rounds; the
// reference's schedule does not (rounds +1, -1, +2 leave ranks apart).
TEST(Sgp, MixingIsNotAnExactAverageAfterThreeRounds) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  if (n != 8) GTEST_SKIP() << "the 8-rank schedule";
  Pusher p(topo);
  for (int64_t round = 0; round < 3; ++round) p.strategy->gossip(round);
  const float* z = p.arena->params().data<float>();
  // Serial: rank values mixed by the hand-written offsets 1, 7, 2 (z_r = (z_r + z_{r-o}) / 2).
  std::vector<std::vector<double>> v(8, std::vector<double>(size_t(p.arena->numel())));
  for (int r = 0; r < 8; ++r)
    for (int64_t i = 0; i < p.arena->numel(); ++i) v[size_t(r)][size_t(i)] = value(r, i);
  for (int off : {1, 7, 2}) {
    auto next = v;
    for (int r = 0; r < 8; ++r)
      for (size_t i = 0; i < next[0].size(); ++i)
        next[size_t(r)][i] = (v[size_t(r)][i] + v[size_t((r - off + 8) % 8)][i]) / 2;
    v = next;
  }
  double worst = 0, off_mean = 0;
  for (int64_t i = 0; i < p.arena->numel(); ++i) {
    double mean = 0;
    for (int r = 0; r < 8; ++r) mean += value(r, i) / 8.0;
    worst = std::max(worst, std::abs(z[i] - v[size_t(me)][size_t(i)]));
    off_mean = std::max(off_mean, std::abs(z[i] - mean));
  }
  EXPECT_LT(worst, 1e-5);
  Tensor t = Tensor::full({1}, float(off_mean));
  topo->world().allreduce(t, ReduceOp::max);
  EXPECT_GT(t.item(), 0.1) << "3 rounds reached the exact average";
}

// sgp.interval = 3: two local SGD steps, then a gossip, twice; from unequal push-sum weights so
// the local steps must go to the numerator x. Serial push-sum over all ranks as reference.
TEST(Sgp, IntervalMatchesSerialPushSum) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  const double lr = 0.25;
  const int I = 3;
  Options opt;
  opt.set("sgp.interval", std::to_string(I));
  std::vector<NamedTensor> nt = {{"a.weight", Tensor::zeros({30})}};
  ParamArena arena(nt);
  SGDOptions so;
  so.lr = lr;
  SGD sgd(arena, so);
  SgpStrategy sgp(topo, opt);
  TrainContext ctx;
  ctx.arena = &arena;
  ctx.optimizer = &sgd;
  ctx.options = &opt;
  sgp.setup(ctx);
  const int64_t m = arena.numel();
  std::vector<char> in_tensor(size_t(m), 0);
  for (auto& seg : arena.segments())
    for (int64_t i = seg.offset; i < seg.offset + seg.numel; ++i) in_tensor[size_t(i)] = 1;
  auto grad = [&](int r, int64_t k, int64_t i) {
    return in_tensor[size_t(i)] ? float((r + 2 * i + 3 * k) % 7) - 3.0f : 0.0f;
  };
  float* z = arena.params().data<float>();
  for (int64_t i = 0; i < m; ++i) z[i] = value(me, i);
  sgp.set_push_sum_weight(start_weight(me, n));
  // Serial reference: x_r = w_r z_r.
  std::vector<std::vector<double>> x(static_cast<size_t>(n),
                                     std::vector<double>(static_cast<size_t>(m)));
  std::vector<double> w(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    w[size_t(r)] = start_weight(r, n);
    for (int64_t i = 0; i < m; ++i) x[size_t(r)][size_t(i)] = w[size_t(r)] * value(r, i);
  }
  const int offsets[2] = {1 % n, (n - 1) % n};  // phone-book entries 0 and 1: +1, -1
  for (int64_t k = 0; k < 2 * I; ++k) {
    StepInfo st;
    st.global_step = k;
    sgd.zero_grad();
    float* g = arena.grads().data<float>();
    for (int64_t i = 0; i < m; ++i) g[i] = grad(me, k, i);
    sgp.after_backward(st);
    sgd.step();
    sgp.after_step(st);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < m; ++i) x[size_t(r)][size_t(i)] -= lr * grad(r, k, i);
    if ((k + 1) % I == 0) {
      const int off = offsets[(k + 1) / I - 1];
      auto x2 = x;
      auto w2 = w;
      for (int r = 0; r < n; ++r) {
        const size_t s = size_t((r - off + n) % n);
        w2[size_t(r)] = (w[size_t(r)] + w[s]) / 2;
        for (int64_t i = 0; i < m; ++i)
          x2[size_t(r)][size_t(i)] = (x[size_t(r)][size_t(i)] + x[s][size_t(i)]) / 2;
      }
      x = x2;
      w = w2;
    }
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      worst = std::max(worst, std::abs(z[i] - x[size_t(me)][size_t(i)] / w[size_t(me)]));
    EXPECT_LT(worst, 1e-5) << "step " << k;
  }
  EXPECT_NEAR(sgp.push_sum_weight(), w[size_t(me)], 1e-6);
  EXPECT_EQ(sgp.state().at("rounds"), 2.0);
}

TEST(Sgp, OneGossipMatchesSerialUniformMixing) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Pusher p(topo);
  for (int64_t round = 0; round < 3; ++round) {
    float* z = p.arena->params().data<float>();
    for (int64_t i = 0; i < p.arena->numel(); ++i) z[i] = value(me, i);
    p.strategy->gossip(round);
    const auto book = sgp_phone_book(n);
    const int h = book[size_t(round) % book.size()];
    const int src = ((me - h) % n + n) % n;  // rank me - o_k sends to me
    int64_t bad = 0;
    for (int64_t i = 0; i < p.arena->numel(); ++i)
      bad += z[i] != (value(me, i) + value(src, i)) * 0.5f;
    EXPECT_EQ(bad, 0) << "round " << round << " hop " << h;
    EXPECT_EQ(p.strategy->push_sum_weight(), 1.0f);  // regular graph: w stays 1
  }
  // The meter's counts (comm/meter.h): collectives are the setup broadcast and the one-time
  // gather of every rank's push-sum weight; each gossip is one point-to-point message of
  // (x, w), numel + 1 floats.
  const CommStats s = p.strategy->take_stats();
  EXPECT_EQ(s.collectives, 1 + 1);
  EXPECT_EQ(s.allreduces, 0);
  EXPECT_EQ(s.messages, 3);
  const double message_bytes = 4.0 * double(p.arena->numel() + 1);
  EXPECT_EQ(s.bytes_sent, 4.0 * double(p.arena->numel()) + 4.0 + 3 * message_bytes);
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
  st.global_step = 1;  // phone-book entry 1: offset -1
  p.sgd->zero_grad();
  float* g = p.arena->grads().data<float>();
  for (int64_t i = 0; i < p.arena->numel(); ++i) g[i] = grad(me, i);
  p.strategy->after_backward(st);
  p.sgd->step();
  p.strategy->after_step(st);
  // Serial push-sum: x_half_r = w_r z_r - lr g_r; z = (x_half_me + x_half_src) / (w_me + w_src).
  const int src = (me + 1) % n;  // offset -1: rank me + 1 sends to me
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
