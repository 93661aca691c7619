// Crossover-SGD (ALGORITHMS.md §5): the derangement sampler (serial, hand-computed laws), the
// segment plan, and multi-rank gossip checked against a serial computation of the same gossip:
// maps identical on all ranks, sum over ranks unchanged, 2 ranks = exact average, repeated
// gossip with zero gradients reaches the global mean, the communication interval, and the
// hierarchical mode (one group = AllReduce-SGD, two groups = global average, groups of one =
// flat Crossover).
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"

#include <cmath>
#include <map>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/crossover.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

// ---- serial: the sampler ------------------------------------------------------------------

TEST(Derangement, BothSamplersGiveDerangements) {
  for (int n = 2; n <= 9; ++n) {
    PhiloxStream rng(7, uint64_t(n));
    for (int k = 0; k < 300; ++k) {
      for (auto kind : {DerangementSampler::balanced, DerangementSampler::uniform}) {
        const auto d = draw_derangement(kind, rng, n);
        ASSERT_TRUE(is_derangement(d)) << "n " << n;
        const auto inv = inverse_map(d);
        for (int i = 0; i < n; ++i) ASSERT_EQ(d[size_t(inv[size_t(i)])], i);
      }
    }
  }
  EXPECT_FALSE(is_derangement({0, 1}));
  EXPECT_FALSE(is_derangement({1, 1, 0}));
  EXPECT_TRUE(is_derangement({1, 2, 0}));
  PhiloxStream rng(1, 1);
  EXPECT_THROW(balanced_derangement(rng, 1), Error);
}

// n = 3 by hand: source 0 picks 1 or 2 (1/2 each). 0->2 forces 1->0, 2->1: map (2,0,1), p 1/2.
// 0->1: source 1 picks 0 or 2; 1->2 then 2->0: map (1,2,0), p 1/4; 1->0 leaves only 2 for
// source 2: dead end, p 1/4. So conditional on success (2,0,1) has p 2/3, (1,2,0) 1/3, and
// restarts per accepted draw average (1/4)/(3/4) = 1/3. Uniform: 1/2 each, 2 rejections per draw.
TEST(Derangement, BalancedRouletteLawForThreeRanks) {
  PhiloxStream rng(42, 0);
  const int draws = 6000;
  int a = 0, restarts_total = 0;
  for (int k = 0; k < draws; ++k) {
    int r = 0;
    const auto d = balanced_derangement(rng, 3, {}, &r);
    restarts_total += r;
    if (d == std::vector<int>{2, 0, 1}) ++a;
  }
  EXPECT_NEAR(double(a) / draws, 2.0 / 3.0, 0.025);
  EXPECT_NEAR(double(restarts_total) / draws, 1.0 / 3.0, 0.04);
  int u = 0, urestarts = 0;
  for (int k = 0; k < draws; ++k) {
    int r = 0;
    if (uniform_derangement(rng, 3, &r) == std::vector<int>{2, 0, 1}) ++u;
    urestarts += r;
  }
  EXPECT_NEAR(double(u) / draws, 0.5, 0.025);
  EXPECT_NEAR(double(urestarts) / draws, 2.0, 0.15);
}

TEST(Derangement, RouletteWeightsAreHonouredAndNotMutated) {
  // n = 2 has a single derangement whatever the weights; n = 4 with weight only on i -> i+1
  // forces the cycle (1,2,3,0) in the pull/choose table: dest[i] = i+1 mod 4.
  const int n = 4;
  std::vector<uint32_t> table(size_t(n * n), 0);
  for (int i = 0; i < n; ++i) table[size_t(i * n + (i + 1) % n)] = 5;
  const auto copy = table;
  PhiloxStream rng(3, 3);
  for (int k = 0; k < 20; ++k)
    EXPECT_EQ(balanced_derangement(rng, n, table), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(table, copy);
}

TEST(Derangement, SameStreamSameMaps) {
  PhiloxStream a(9, 4), b(9, 4), c(9, 5);
  bool differ = false;
  for (int k = 0; k < 20; ++k) {
    const auto da = balanced_derangement(a, 8), db = balanced_derangement(b, 8);
    EXPECT_EQ(da, db);
    differ |= da != balanced_derangement(c, 8);
  }
  EXPECT_TRUE(differ);
}

// ---- serial: segments ---------------------------------------------------------------------

std::unique_ptr<ParamArena> named_arena(const std::vector<std::pair<std::string, int64_t>>& ps) {
  std::vector<NamedTensor> v;
  for (auto& [name, numel] : ps) v.push_back({name, Tensor::zeros({numel})});
  return std::make_unique<ParamArena>(v);  // ready order: the reverse of registration
}

std::vector<std::string> names_of(const std::vector<GossipSegment>& segs) {
  std::vector<std::string> n;
  for (auto& s : segs) n.push_back(s.name);
  return n;
}

void expect_tiling(const ParamArena& arena, const std::vector<GossipSegment>& segs) {
  ASSERT_FALSE(segs.empty());
  EXPECT_EQ(segs.front().begin, 0);
  EXPECT_EQ(segs.back().end, arena.numel());
  for (size_t i = 1; i < segs.size(); ++i) EXPECT_EQ(segs[i].begin, segs[i - 1].end);
  for (auto& s : segs) {
    const auto& first = arena.segments()[size_t(s.first_tensor)];
    const auto& last = arena.segments()[size_t(s.last_tensor)];
    EXPECT_LE(s.begin, first.offset);
    EXPECT_GE(s.end, last.offset + last.numel);
  }
}

TEST(CrossoverSegments, ResNetNamesByBlocksLayersTensorsModelAndExplicit) {
  auto arena = named_arena({{"conv1.weight", 27},
                            {"bn1.weight", 3},
                            {"bn1.bias", 3},
                            {"layer1.0.conv1.weight", 40},
                            {"layer1.0.bn1.weight", 4},
                            {"layer1.1.conv1.weight", 40},
                            {"layer2.0.conv1.weight", 50},
                            {"layer2.0.downsample.0.weight", 20},
                            {"fc.weight", 30},
                            {"fc.bias", 10}});
  auto blocks = plan_gossip_segments(*arena, "blocks");
  // Arena order is backward order; the stem (conv1, bn1) is folded into the first block.
  EXPECT_EQ(names_of(blocks), (std::vector<std::string>{"fc", "layer2.0", "layer1.1", "layer1.0"}));
  EXPECT_EQ(blocks[3].last_tensor - blocks[3].first_tensor + 1, 5);
  expect_tiling(*arena, blocks);
  auto layers = plan_gossip_segments(*arena, "layers");
  EXPECT_EQ(names_of(layers), (std::vector<std::string>{"fc", "layer2", "layer1", "bn1", "conv1"}));
  expect_tiling(*arena, layers);
  EXPECT_EQ(plan_gossip_segments(*arena, "tensors").size(), 10u);
  EXPECT_EQ(plan_gossip_segments(*arena, "model").size(), 1u);
  auto expl = plan_gossip_segments(*arena, "conv1,bn1,layer1|layer2|fc");
  EXPECT_EQ(names_of(expl), (std::vector<std::string>{"fc", "layer2", "conv1,bn1,layer1"}));
  expect_tiling(*arena, expl);
  EXPECT_THROW(plan_gossip_segments(*arena, "conv1,fc|bn1,layer1,layer2"),
               Error);                                                    // not contiguous
  EXPECT_THROW(plan_gossip_segments(*arena, "conv1|bn1|layer1"), Error);  // fc matches no group
}

TEST(CrossoverSegments, MnistCnnHasOnePerLayer) {
  auto model = make_model("mnist_cnn", 1);
  ParamArena arena(model->named_parameters());
  auto segs = plan_gossip_segments(arena, "blocks");
  EXPECT_EQ(names_of(segs), (std::vector<std::string>{"fc1", "cnn2", "cnn1"}));
  expect_tiling(arena, segs);
}

// ---- multi-rank gossip --------------------------------------------------------------------

// Exact in f32 (multiples of 1/8 below 8), so one gossip is exact and sums can be compared
// bitwise.
float value(int r, int64_t i) {
  return float((r * 37 + i * 11) % 64) / 8.0f;
}

struct Gossiper {
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  std::unique_ptr<CrossoverStrategy> strategy;
  TrainContext ctx;
  Options opt;
  Gossiper(std::shared_ptr<Topology> topo, const std::map<std::string, std::string>& extra) {
    arena = named_arena({{"conv1.weight", 30},
                         {"layer1.0.w", 21},
                         {"layer1.1.w", 17},
                         {"layer2.0.w", 40},
                         {"fc.weight", 25},
                         {"fc.bias", 5}});
    SGDOptions so;
    so.lr = 0.1;
    so.momentum = 0.9;
    sgd = std::make_unique<SGD>(*arena, so);
    opt.set("crossover.seed", "11");
    for (auto& [k, v] : extra) opt.set(k, v);
    strategy = std::make_unique<CrossoverStrategy>(topo, opt);
    ctx.arena = arena.get();
    ctx.optimizer = sgd.get();
    ctx.options = &opt;
    strategy->setup(ctx);
    fill(topo->world().rank());
  }
  void fill(int r) {
    float* p = arena->params().data<float>();
    for (int64_t i = 0; i < arena->numel(); ++i) p[i] = value(r, i);
  }
};

std::shared_ptr<Topology> world_topology(int ranks_per_node = 1) {
  Options o;
  o.set("ranks_per_node", std::to_string(ranks_per_node));
  return std::make_shared<Topology>(Topology::from_options(o));
}

TEST(CrossoverGossip, MapsAreDerangementsIdenticalOnAllRanks) {
  auto topo = world_topology();
  const int n = topo->world().size();
  for (const char* sampler : {"balanced", "uniform"}) {
    Gossiper h(topo, {{"crossover.segments", "tensors"}, {"crossover.sampler", sampler}});
    for (int64_t round = 0; round < 25; ++round) {
      const auto maps = h.strategy->draw_maps(round, n);
      ASSERT_EQ(maps.size(), 6u);
      std::vector<int32_t> flat;
      for (auto& m : maps) {
        ASSERT_TRUE(is_derangement(m)) << sampler << " round " << round;
        flat.insert(flat.end(), m.begin(), m.end());
      }
      Tensor mine = Tensor::empty({int64_t(flat.size())}, DType::i32);
      std::copy(flat.begin(), flat.end(), mine.data<int32_t>());
      Tensor all = Tensor::empty({int64_t(flat.size()) * n}, DType::i32);
      topo->world().allgather(mine, all);
      const int32_t* a = all.data<int32_t>();
      for (int r = 0; r < n; ++r)
        for (size_t k = 0; k < flat.size(); ++k)
          ASSERT_EQ(a[size_t(r) * flat.size() + k], flat[k]) << "rank " << r << " round " << round;
    }
  }
}

TEST(CrossoverGossip, OneGossipMatchesSerialAndKeepsTheSum) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Gossiper g(topo, {{"crossover.check_maps", "true"}});
  ASSERT_EQ(g.strategy->segments().size(), 4u);  // fc, layer2.0, layer1.1, layer1.0+stem
  Tensor sum_before = g.arena->params().clone();
  topo->world().allreduce(sum_before, ReduceOp::sum);
  const int64_t round = 5;
  const auto maps = g.strategy->draw_maps(round, n);
  g.strategy->gossip(round);
  // Serial: x_s <- (x_s + x_{d_s[me], s}) / 2, computed from the known starting values.
  const float* p = g.arena->params().data<float>();
  int64_t bad = 0;
  for (size_t s = 0; s < g.strategy->segments().size(); ++s) {
    const auto& seg = g.strategy->segments()[s];
    const int src = maps[s][size_t(me)];
    for (int64_t i = seg.begin; i < seg.end; ++i)
      bad += p[i] != (value(me, i) + value(src, i)) * 0.5f;
  }
  EXPECT_EQ(bad, 0);
  Tensor sum_after = g.arena->params().clone();
  topo->world().allreduce(sum_after, ReduceOp::sum);
  EXPECT_EQ(sum_after.to_vector(), sum_before.to_vector());
  const CommStats s = g.strategy->take_stats();
  // Setup broadcast of the params (no buffers) and check_maps' allgather of the 4 maps (this
  // rank's 4 x n i32); the 4 segment sends are point-to-point messages (comm/meter.h).
  EXPECT_EQ(s.collectives, 1 + 1);
  EXPECT_EQ(s.messages, 4);
  const double map_bytes = 4.0 * n * 4;
  EXPECT_DOUBLE_EQ(s.bytes_sent - double(g.arena->params().nbytes()) - map_bytes,
                   double(g.arena->numel()) * 4);
}

// Each segment gossips with its own map. The source of every segment is read off the data
// (values are distinct per rank at every element, so (x_me + x_src)/2 names src), and compared
// with maps drawn here by the protocol's own statement, not by draw_maps: one Philox stream per
// round keyed by (crossover.seed ^ 0xC2055EED0F0F0F0F, round), the segments drawing one
// derangement after another from it. A gossip that reused one map for every segment (or
// redrew the same one) fails, and for n >= 3 some round must have segments with different maps.
TEST(CrossoverGossip, EverySegmentFollowsItsOwnMap) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Gossiper g(topo, {});
  const auto& segs = g.strategy->segments();
  ASSERT_EQ(segs.size(), 4u);
  bool some_round_differs = false;
  for (int64_t round = 0; round < 6; ++round) {
    g.fill(me);
    g.strategy->gossip(round);
    PhiloxStream rng(11ull ^ 0xC2055EED0F0F0F0Full, uint64_t(round));
    std::vector<std::vector<int>> expect;
    for (size_t s = 0; s < segs.size(); ++s) expect.push_back(balanced_derangement(rng, n));
    const float* p = g.arena->params().data<float>();
    std::vector<int32_t> src(segs.size(), -1);
    for (size_t s = 0; s < segs.size(); ++s) {
      for (int r = 0; r < n && src[s] < 0; ++r) {
        bool all = true;
        for (int64_t i = segs[s].begin; i < segs[s].end && all; ++i)
          all = p[i] == (value(me, i) + value(r, i)) * 0.5f;
        if (all) src[s] = r;
      }
      EXPECT_EQ(src[s], expect[s][size_t(me)]) << "round " << round << " segment " << s;
    }
    for (size_t s = 1; s < segs.size(); ++s) some_round_differs |= expect[s] != expect[0];
    // The sources read off the data form each segment's whole map across the ranks.
    Tensor mine = Tensor::empty({int64_t(src.size())}, DType::i32);
    std::copy(src.begin(), src.end(), mine.data<int32_t>());
    Tensor all = Tensor::empty({int64_t(src.size()) * n}, DType::i32);
    topo->world().allgather(mine, all);
    const int32_t* a = all.data<int32_t>();
    for (size_t s = 0; s < segs.size(); ++s) {
      std::vector<int> map(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) map[size_t(r)] = a[size_t(r) * src.size() + s];
      EXPECT_EQ(map, expect[s]) << "round " << round << " segment " << s;
    }
  }
  if (n >= 3) {
    EXPECT_TRUE(some_round_differs) << "every round drew one map for all segments";
  }
}

TEST(CrossoverGossip, TwoRanksAverageExactly) {
  // Ranks 2k and 2k+1 form 2-rank worlds; with an odd n the last rank is alone (no gossip:
  // unchanged).
  auto world = world_topology();
  auto& w = world->world();
  auto sub = w.split(w.rank() / 2, w.rank(), "pair");
  auto topo = std::make_shared<Topology>(sub);
  Gossiper g(topo, {});
  const int me = sub->rank(), world_me = w.rank();
  g.fill(world_me);
  g.strategy->gossip(0);
  const float* p = g.arena->params().data<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < g.arena->numel(); ++i) {
    const int base = world_me / 2 * 2;  // the pair's first world rank
    const float expect =
        sub->size() == 2 ? (value(base, i) + value(base + 1, i)) * 0.5f : value(world_me, i);
    bad += p[i] != expect;
  }
  EXPECT_EQ(bad, 0) << "rank " << me << " of a group of " << sub->size();
}

TEST(CrossoverGossip, RepeatedGossipWithZeroGradientsReachesTheMean) {
  auto topo = world_topology();
  const int n = topo->world().size();
  Gossiper g(topo, {});
  std::vector<double> mean(size_t(g.arena->numel()), 0.0);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < g.arena->numel(); ++i) mean[size_t(i)] += value(r, i) / n;
  const int steps = 40;
  for (int k = 0; k < steps; ++k) {
    StepInfo st;
    st.global_step = k;
    st.step_in_epoch = k;
    st.steps_per_epoch = steps;
    const StepPlan plan = g.strategy->plan(st);
    ASSERT_TRUE(plan.zero_grad && plan.optimizer_step);
    g.sgd->zero_grad();
    g.strategy->after_backward(st);
    g.sgd->step();  // zero gradient, no weight decay: no change
    g.strategy->after_step(st);
  }
  const float* p = g.arena->params().data<float>();
  double worst = 0;
  for (int64_t i = 0; i < g.arena->numel(); ++i)
    worst = std::max(worst, std::abs(double(p[i]) - mean[size_t(i)]));
  EXPECT_LT(worst, 1e-4) << "after " << steps << " gossip rounds on " << n << " ranks";
  EXPECT_EQ(g.strategy->state().at("rounds"), double(steps));
}

TEST(CrossoverGossip, ConsensusEvalSeesTheMeanAndRestores) {
  auto topo = world_topology();
  const int n = topo->world().size(), me = topo->world().rank();
  Gossiper g(topo, {});
  double worst = 0;
  const bool ran = g.strategy->consensus_eval([&] {
    const float* p = g.arena->params().data<float>();
    for (int64_t i = 0; i < g.arena->numel(); ++i) {
      double m = 0;
      for (int r = 0; r < n; ++r) m += value(r, i);
      worst = std::max(worst, std::abs(p[i] - m / n));
    }
  });
  EXPECT_TRUE(ran);
  EXPECT_LT(worst, 1e-5);
  const float* p = g.arena->params().data<float>();
  for (int64_t i = 0; i < g.arena->numel(); ++i) ASSERT_EQ(p[i], value(me, i));
}

TEST(CrossoverGossip, IntervalAccumulatesTheMeanGradientAndGossipsOncePerInterval) {
  auto topo = world_topology();
  Gossiper g(topo, {{"crossover.interval", "3"}});
  // 7 steps per epoch: intervals {0,1,2}, {3,4,5}, {6} (the epoch's last batch closes one).
  const std::vector<bool> zero = {true, false, false, true, false, false, true};
  const std::vector<bool> step = {false, false, true, false, false, true, true};
  float* grad = g.arena->grads().data<float>();
  for (int k = 0; k < 7; ++k) {
    StepInfo st;
    st.global_step = k;
    st.step_in_epoch = k;
    st.steps_per_epoch = 7;
    const StepPlan plan = g.strategy->plan(st);
    EXPECT_EQ(plan.zero_grad, zero[size_t(k)]) << k;
    EXPECT_EQ(plan.optimizer_step, step[size_t(k)]) << k;
    if (plan.zero_grad) g.arena->zero_grad();
    for (int64_t i = 0; i < g.arena->numel(); ++i) grad[i] += float(k + 1);  // "backward"
    g.strategy->after_backward(st);
    if (k == 2) {
      EXPECT_EQ(grad[0], 2.0f);  // (1 + 2 + 3) / 3
    }
    if (k == 5) {
      EXPECT_EQ(grad[5], 5.0f);  // (4 + 5 + 6) / 3
    }
    if (k == 6) {
      EXPECT_EQ(grad[9], 7.0f);  // a single micro-batch
    }
    g.strategy->after_step(st);
  }
  EXPECT_EQ(g.strategy->state().at("rounds"), 3.0);
}

TEST(CrossoverGossip, RegistryBuildsIt) {
  Options o;
  o.set("algo", "crossover");
  EXPECT_EQ(make_strategy(o)->name(), "crossover");
}

// ---- hierarchical mode on mnist_cnn -------------------------------------------------------

constexpr int kB = 4;

// Rank r's batch at step `step` (different data on every rank).
void rank_batch(int step, int r, Tensor& x, Tensor& y) {
  std::vector<float> xv(static_cast<size_t>(kB) * 28 * 28, 0.f);
  std::vector<int64_t> yv(static_cast<size_t>(kB), 0);
  uint64_t h = 0x9e3779b97f4a7c15ull * uint64_t(step * 131 + r + 1);
  test::fill_xorshift(xv, h);
  for (int i = 0; i < kB; ++i) yv[size_t(i)] = int64_t((step * 7 + r * 5 + i * 3) % 10);
  x = Tensor::from_vector(xv, {kB, 1, 28, 28});
  y = Tensor::from_vector_i64(yv, {kB});
}

struct Replica : test::MnistReplica {
  std::unique_ptr<Strategy> strategy;
  Options opt;
  Replica(uint64_t seed, std::unique_ptr<Strategy> s, Options o)
      : MnistReplica(seed, 0.05, 0.9, 1e-4), strategy(std::move(s)), opt(std::move(o)) {
    TrainContext ctx;
    ctx.model = model.get();
    ctx.arena = arena.get();
    ctx.optimizer = sgd.get();
    ctx.options = &opt;
    strategy->setup(ctx);
  }
  // The training loop's call sequence (comm/strategy.h).
  void train(int steps, int rank) {
    for (int k = 0; k < steps; ++k) {
      StepInfo st;
      st.global_step = k;
      st.step_in_epoch = k;
      st.steps_per_epoch = steps;
      const StepPlan plan = strategy->plan(st);
      if (plan.zero_grad) sgd->zero_grad();
      strategy->before_forward(st);
      Tensor x, y;
      rank_batch(k, rank, x, y);
      backward(cross_entropy(model->forward(x), y));
      strategy->after_backward(st);
      if (plan.optimizer_step) sgd->step();
      strategy->after_step(st);
    }
  }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  double d = 0;
  for (size_t i = 0; i < va.size(); ++i) d = std::max(d, std::abs(double(va[i]) - vb[i]));
  return d;
}

// Max over ranks of |mine - max over comm| (0 iff all ranks of comm hold the same values).
double spread(Communicator& comm, const Tensor& t) {
  Tensor mx = t.clone();
  comm.allreduce(mx, ReduceOp::max);
  Tensor d = Tensor::full({1}, float(max_abs_diff(t, mx)));
  comm.allreduce(d, ReduceOp::max);
  return d.item();
}

TEST(CrossoverHierarchical, OneGroupEqualsAllReduceSgd) {
  const int n = MpiEnv::get().world_size(), me = MpiEnv::get().world_rank();
  auto topo = world_topology(n);  // one (virtual) node: one group
  Options oc;
  oc.set("crossover.hierarchical", "true");
  oc.set("crossover.sync.bucket_cap_mb", "0.01");
  oc.set("crossover.sync.first_bucket_mb", "0.005");
  Options oa;
  oa.set("allreduce.bucket_cap_mb", "0.01");
  oa.set("allreduce.first_bucket_mb", "0.005");
  Replica cross(100 + me, std::make_unique<CrossoverStrategy>(topo, oc), oc);
  Replica ar(100 + me, std::make_unique<AllReduceStrategy>(topo, oa), oa);
  ASSERT_EQ(max_abs_diff(cross.arena->params(), ar.arena->params()), 0.0);  // rank 0's start
  cross.train(6, me);
  ar.train(6, me);
  EXPECT_LT(max_abs_diff(cross.arena->params(), ar.arena->params()), 1e-6);
  EXPECT_EQ(cross.strategy->state().at("gossip_ranks"), me == 0 ? 1.0 : 0.0);
}

TEST(CrossoverHierarchical, GroupsShareParametersAndTwoGroupsAverageGlobally) {
  const int n = MpiEnv::get().world_size(), me = MpiEnv::get().world_rank();
  if (n % 2 == 0) {
    auto topo = world_topology(2);
    Options oc;
    oc.set("crossover.hierarchical", "true");
    Replica cross(300 + me, std::make_unique<CrossoverStrategy>(topo, oc), oc);
    cross.train(4, me);
    // Every member of a group holds its leader's parameters.
    EXPECT_EQ(spread(topo->node(), cross.arena->params()), 0.0);
    // Two groups: the leaders' derangement is a swap, an exact average: all ranks agree.
    if (n == 4) {
      EXPECT_EQ(spread(topo->world(), cross.arena->params()), 0.0);
    }
    if (n >= 6) {
      EXPECT_GT(spread(topo->world(), cross.arena->params()), 0.0);
    }
  } else {
    // Groups of one: the hierarchical mode is flat Crossover (same ranks, same maps).
    auto topo = world_topology(1);
    Options oh, of;
    oh.set("crossover.hierarchical", "true");
    Replica h(400 + me, std::make_unique<CrossoverStrategy>(topo, oh), oh);
    Replica f(400 + me, std::make_unique<CrossoverStrategy>(topo, of), of);
    h.train(4, me);
    f.train(4, me);
    EXPECT_EQ(max_abs_diff(h.arena->params(), f.arena->params()), 0.0);
    EXPECT_GT(spread(topo->world(), f.arena->params()), 0.0);  // gossip: replicas differ
  }
}

}  // namespace
}  // namespace dplab
