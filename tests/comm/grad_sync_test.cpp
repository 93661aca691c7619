// GradSync and AllReduce-SGD: bucket plans, averaging (flat, 16-bit wire, hierarchical),
// no_sync accumulation, unused parameters, overlap with a slow link (the link.inter shorthand
// in virtual time), strategy setup.
// The autograd engine is emulated here by writing gradients and firing the grad-ready hooks in
// ready order, exactly what AccumulateGrad does, so these tests need no layers or ops.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/comm/topology.h"

namespace dplab {
namespace {

std::unique_ptr<ParamArena> make_arena(const std::vector<int64_t>& numels, float base = 0.f) {
  std::vector<NamedTensor> ps;
  for (size_t i = 0; i < numels.size(); ++i)
    ps.push_back({fmt::format("p{}", i), Tensor::full({numels[i]}, base + float(i))});
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
}

// Gradient value of element j of segment s on rank r (exact in bf16: multiples of 1/8 < 32).
float grad_value(int r, int s, int64_t j) {
  return static_cast<float>((r * 5 + s * 3 + j) % 29) / 8.0f;
}

// "Backward": for each segment in ready (arena) order, write its gradient, then fire its hooks.
// With a virtual clock, `compute_s` of compute is added to it before each segment.
void fake_backward(ParamArena& arena, int rank, const std::vector<bool>& used = {},
                   cluster::VirtualClock* clock = nullptr, double compute_s = 0) {
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    if (clock) clock->add_compute(compute_s);
    if (!used.empty() && !used[s]) continue;
    const auto& seg = arena.segments()[s];
    Tensor g = seg.param.grad();
    float* p = g.data<float>();
    for (int64_t j = 0; j < seg.numel; ++j) p[j] += grad_value(rank, int(s), j);
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
}

// Checks that the gradients hold factor * (sum over ranks of the fake gradient).
void expect_grads(const ParamArena& arena, int size, double factor, double rtol,
                  const std::string& what, const std::vector<bool>& used = {}) {
  int64_t bad = 0;
  std::string first;
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    const auto& seg = arena.segments()[s];
    auto v = seg.param.grad().to_vector();
    for (int64_t j = 0; j < seg.numel; ++j) {
      double e = 0;
      for (int r = 0; r < size; ++r) e += (used.empty() || used[s]) ? grad_value(r, int(s), j) : 0;
      e *= factor;
      if (std::abs(v[j] - e) > rtol * std::abs(e) + 1e-6) {
        if (first.empty()) first = fmt::format("seg {} elem {}: got {} expected {}", s, j, v[j], e);
        ++bad;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << first;
}

TEST(BucketPlan, FirstBucketThenCap) {
  const double kb = 1.0 / 1024.0;  // MiB per KiB
  auto arena = make_arena({100, 200, 50, 1000, 30, 30, 2000});
  const auto& seg = arena->segments();
  // first bucket >= 1 KiB: 400 B + 800 B; then cap 4 KiB: 200 B + 4000 B; then the rest.
  auto b = plan_buckets(seg, 1 * kb, 4 * kb);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].first_segment, 0);
  EXPECT_EQ(b[0].last_segment, 1);
  EXPECT_EQ(b[1].first_segment, 2);
  EXPECT_EQ(b[1].last_segment, 3);
  EXPECT_EQ(b[2].first_segment, 4);
  EXPECT_EQ(b[2].last_segment, 6);
  EXPECT_EQ(b[0].begin, 0);
  EXPECT_EQ(b[0].end, seg[1].offset + 200);
  EXPECT_EQ(b[1].begin, seg[2].offset);
  EXPECT_EQ(b[2].end, seg[6].offset + 2000);
  // Cap 0: one bucket per tensor, each exactly its segment.
  auto per = plan_buckets(seg, 1, 0);
  ASSERT_EQ(per.size(), seg.size());
  for (size_t i = 0; i < seg.size(); ++i) {
    EXPECT_EQ(per[i].begin, seg[i].offset);
    EXPECT_EQ(per[i].numel(), seg[i].numel);
  }
  // Defaults (1 MiB, 25 MiB) on a small model: everything in one bucket.
  EXPECT_EQ(plan_buckets(seg, 1, 25).size(), 1u);
  EXPECT_THROW(plan_buckets(seg, -1, 25), Error);
}

TEST(BucketPlan, ReadyOrderLayoutPutsLastLayerFirst) {
  std::vector<NamedTensor> ps = {{"conv.weight", Tensor::zeros({4, 4})},
                                 {"fc.weight", Tensor::zeros({300})}};
  ParamArena arena(ps);  // ready order: fc.weight first
  auto b = plan_buckets(arena.segments(), 1.0 / 1024, 0);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(arena.segments()[b[0].first_segment].name, "fc.weight");
}

struct Case {
  const char* name;
  DType wire;
  bool hierarchical;
  double cap_mb;
};

TEST(GradSync, AveragesEveryConfiguration) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options topt;
  if (W % 2 == 0) topt.set("ranks_per_node", "2");
  auto topo = std::make_shared<Topology>(Topology::from_options(topt));
  for (Case c :
       {Case{"f32", DType::f32, false, 0.002}, Case{"f32 per-tensor", DType::f32, false, 0},
        Case{"bf16", DType::bf16, false, 0.002}, Case{"f16", DType::f16, false, 25},
        Case{"hierarchical f32", DType::f32, true, 0.002},
        Case{"hierarchical bf16", DType::bf16, true, 0}}) {
    auto arena = make_arena({7, 300, 1, 1000, 33});
    GradSyncOptions o;
    o.first_bucket_mb = 0.001;
    o.bucket_cap_mb = c.cap_mb;
    o.wire = c.wire;
    o.hierarchical = c.hierarchical;
    GradSync sync(*arena, topo->world_ptr(), o, topo->node_ptr(), topo->cross_ptr());
    for (int step = 0; step < 2; ++step) {
      arena->zero_grad();
      fake_backward(*arena, R);
      sync.finish();
      const double tol = c.wire == DType::f32 ? 1e-6 : (W + 2) * std::ldexp(1.0, -8);
      expect_grads(*arena, W, 1.0 / W, tol, fmt::format("{} step {}", c.name, step));
    }
    CommStats st = sync.take_stats();
    EXPECT_EQ(st.allreduces, 2 * static_cast<int64_t>(sync.buckets().size())) << c.name;
    EXPECT_GT(st.bytes_sent, 0) << c.name;
    EXPECT_EQ(sync.take_stats().collectives, 0) << "stats reset";
  }
}

TEST(GradSync, NoSyncAccumulatesThenSyncsTheSum) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto world = mpi_world();
  auto arena = make_arena({50, 20});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  GradSync sync(*arena, world, o);
  arena->zero_grad();
  sync.set_no_sync(true);
  fake_backward(*arena, R);
  sync.finish();
  fake_backward(*arena, R);
  sync.finish();
  EXPECT_EQ(sync.take_stats().collectives, 0);
  // Only my own two passes, no communication.
  for (size_t s = 0; s < arena->segments().size(); ++s) {
    auto v = arena->segments()[s].param.grad().to_vector();
    for (size_t j = 0; j < v.size(); ++j) ASSERT_EQ(v[j], 2 * grad_value(R, int(s), int64_t(j)));
  }
  // A synchronised third pass averages the accumulated sums; sum mode leaves the plain sum.
  sync.set_no_sync(false);
  fake_backward(*arena, R);
  sync.finish();
  expect_grads(*arena, W, 3.0 / W, 1e-6, "accumulated average");
  sync.set_average(false);
  arena->zero_grad();
  fake_backward(*arena, R);
  sync.finish();
  expect_grads(*arena, W, 1.0, 1e-6, "sum mode");
}

TEST(GradSync, UnusedParametersStillTravel) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto world = mpi_world();
  auto arena = make_arena({10, 10, 10});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  GradSync sync(*arena, world, o);
  std::vector<bool> used = {true, false, true};
  arena->zero_grad();
  fake_backward(*arena, R, used);
  sync.finish();
  expect_grads(*arena, W, 1.0 / W, 1e-6, "unused middle tensor", used);
}

// Three steps of four 64 KiB tensors, one bucket each, on the link shorthand's platform with
// the clock in manual mode: compute is what the test adds (`spacing` buckets' time before each
// tensor), so every time is exact. Each ring allreduce costs c = 2(W-1) alpha + 2(W-1)/W n/B
// (W = 2: 2 x 2 ms + 65536 / 20e6 s = 7.28 ms).
struct FourBucketRun {
  double c = 0;  // one bucket's time
  CommStats total;
  double clock_end = 0;
};
FourBucketRun run_four_buckets(double spacing) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options topt;
  topt.set("ranks_per_node", "1");
  topt.set("link.inter", "2ms,20MB/s");
  CommConfig cfg = CommConfig::from_options(topt);
  EXPECT_TRUE(cfg.platform);
  cfg.virtual_time =
      std::make_shared<cluster::VirtualTime>(*cfg.platform, cluster::shape_of(*cfg.platform, W, 1),
                                             cluster::VirtualClock::Compute::manual);
  cluster::VirtualClock& clock = cfg.virtual_time->clock;
  auto world = mpi_world(cfg);
  auto arena = make_arena({16384, 16384, 16384, 16384});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  GradSync sync(*arena, world, o);
  FourBucketRun run;
  run.c = 2.0 * (W - 1) * 2e-3 + 2.0 * (W - 1) / W * 16384 * 4.0 / 20e6;
  for (int step = 0; step < 3; ++step) {
    arena->zero_grad();
    fake_backward(*arena, R, {}, &clock, spacing * run.c);
    sync.finish();
    expect_grads(*arena, W, 1.0 / W, 1e-6, "four-bucket step");
    run.total.add(sync.take_stats());
  }
  run.clock_end = clock.now();
  return run;
}

// 1.2 buckets of compute before each tensor: a bucket ends before the next is ready and only
// the last one, ready as backward ends, is exposed: exactly one bucket's time per step.
TEST(GradSync, OverlapHidesSlowInterNodeLink) {
  if (MpiEnv::get().world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const FourBucketRun r = run_four_buckets(1.2);
  EXPECT_NEAR(r.total.in_flight_s, 3 * 4 * r.c, 1e-9);
  // Without overlap all four buckets would be exposed.
  EXPECT_NEAR(r.total.exposed_wait_s, 3 * r.c, 1e-9);
  EXPECT_NEAR(r.clock_end, 3 * (4 * 1.2 * r.c + r.c), 1e-9);
}

// Buckets ready faster than the link carries them queue: bucket k (ready at (k + 1) c / 2)
// starts when bucket k - 1 ends, at (k + 1/2) c, and ends at (k + 3/2) c. Each is in flight for
// c, not from its ready time (which would count the queue: 1 + 1.5 + 2 + 2.5 = 7 c per step,
// more than the 4 c the link was busy); the last ends 2.5 c after backward.
TEST(GradSync, QueuedBucketsAreInFlightFromTheirStart) {
  if (MpiEnv::get().world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const FourBucketRun r = run_four_buckets(0.5);
  EXPECT_NEAR(r.total.in_flight_s, 3 * 4 * r.c, 1e-9);
  EXPECT_NEAR(r.total.exposed_wait_s, 3 * 2.5 * r.c, 1e-9);
  EXPECT_NEAR(r.clock_end, 3 * 4.5 * r.c, 1e-9);
}

TEST(AllReduceStrategy, SetupBroadcastsAndStepsAverage) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt;
  opt.set("algo", "allreduce");
  opt.set("allreduce.bucket_cap_mb", "0");
  auto strategy = make_strategy(opt);
  EXPECT_EQ(strategy->name(), "allreduce");
  EXPECT_EQ(strategy->world_size(), W);
  EXPECT_EQ(strategy->rank(), R);
  auto arena = make_arena({5, 9}, /*base=*/10.f * R);  // ranks start different
  Tensor buf = Tensor::full({3}, 100 + R);
  TrainContext ctx;
  ctx.arena = arena.get();
  ctx.buffers = {{"bn.running_mean", buf}};
  strategy->setup(ctx);
  // Rank 0's parameters everywhere: p0 = 0, p1 = 1.
  for (float v : arena->segments()[0].param.to_vector()) EXPECT_EQ(v, 0.f);
  for (float v : arena->segments()[1].param.to_vector()) EXPECT_EQ(v, 1.f);
  for (float v : buf.to_vector()) EXPECT_EQ(v, 100.f);
  StepInfo step;
  arena->zero_grad();
  fake_backward(*arena, R);
  strategy->after_backward(step);
  expect_grads(*arena, W, 1.0 / W, 1e-6, "strategy step");
  // drain averages running statistics.
  buf.fill_(R);
  strategy->drain();
  for (float v : buf.to_vector()) EXPECT_FLOAT_EQ(v, (W - 1) / 2.0f);
  CommStats s = strategy->take_stats();
  EXPECT_EQ(s.allreduces, 2 + (W > 1 ? 1 : 0));  // two buckets + one buffer (if W > 1)
  Options bad;
  bad.set("algo", "nonesuch");
  EXPECT_THROW(make_strategy(bad), Error);
}

}  // namespace
}  // namespace dplab
