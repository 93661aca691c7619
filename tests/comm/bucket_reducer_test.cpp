// GradSync's bucket reducers (comm/bucket_reducer.h, issue #32 item 6): a reducer an experiment
// registers by name, selected by the option <prefix>reducer or handed to set_reducer(), is the
// one GradSync runs on every bucket (its result checked against a serial computation of every
// rank's gradients), and its collectives are counted by the meter's rules (payload = numel x
// wire type size; ring wire bytes, comm/wire_bytes.h) like the built-in reducers'.
// The autograd engine is emulated by writing gradients and firing the grad-ready hooks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dplab/comm/bucket_reducer.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/topology.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

std::unique_ptr<ParamArena> make_arena(const std::vector<int64_t>& numels) {
  std::vector<NamedTensor> ps;
  for (size_t i = 0; i < numels.size(); ++i)
    ps.push_back({fmt::format("p{}", i), Tensor::zeros({numels[i]})});
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
}

// Gradient of element j of segment s on rank r at step t: multiples of 1/8 below 8, so sums over
// a few ranks and their products with the factors below are exact in f32.
float grad_value(int r, int t, int s, int64_t j) {
  return static_cast<float>((r * 5 + t * 7 + s * 3 + j) % 61) / 8.0f;
}

// "Backward": each segment's gradient in arena order, then its hooks; only the first `fire`
// segments' hooks (all: -1).
void backward(ParamArena& arena, int r, int t, int fire = -1) {
  arena.zero_grad();
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    const auto& seg = arena.segments()[s];
    float* p = seg.param.grad().data<float>();
    for (int64_t j = 0; j < seg.numel; ++j) p[j] = grad_value(r, t, int(s), j);
    if (fire >= 0 && int(s) >= fire) continue;
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
}

// factor x the sum over the W ranks of the gradients of step t, element by element (serial).
void expect_scaled_sum(const ParamArena& arena, int W, int t, double factor,
                       const std::string& what) {
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    const auto& seg = arena.segments()[s];
    const auto v = seg.param.grad().to_vector();
    for (int64_t j = 0; j < seg.numel; ++j) {
      double sum = 0;
      for (int r = 0; r < W; ++r) sum += grad_value(r, t, int(s), j);
      ASSERT_EQ(double(v[size_t(j)]), factor * sum) << what << ": segment " << s << " elem " << j;
    }
  }
}

// The test's own reducer: the sum over the world (one allreduce through the context), then a
// hand factor, whatever GradSync's average option says. Records what GradSync asked of it.
class SumThenScale : public BucketReducer {
 public:
  explicit SumThenScale(float factor) : factor_(factor) {}
  std::string name() const override { return "test_sum_then_scale"; }
  void reduce(BucketView& bucket, BucketContext& ctx) override {
    EXPECT_EQ(bucket.grad.numel(), bucket.range.numel());
    EXPECT_EQ(ctx.bucket(), bucket.index);
    ctx.allreduce(ctx.world(), bucket.grad, ReduceOp::sum);
    float* p = bucket.grad.data<float>();
    for (int64_t i = 0; i < bucket.grad.numel(); ++i) p[i] *= factor_;
    seen.push_back(bucket.index);
  }
  void end_step() override { ++steps; }
  std::vector<int> seen;  // buckets in the order reduced (the communication thread's)
  int steps = 0;

 private:
  float factor_;
};

constexpr float kFactor = 0.375f;  // exact in f32

// Registers the test reducer once per process (the registry refuses a second registration).
void register_test_reducer() {
  static const bool once = [] {
    register_bucket_reducer("test_sum_then_scale", [](const ReducerSetup& s) {
      EXPECT_FALSE(s.buckets.empty());
      EXPECT_EQ(s.tensors.size(), s.buckets.size());
      return std::make_unique<SumThenScale>(kFactor);
    });
    return true;
  }();
  (void)once;
}

// Bytes of every bucket of `sync`'s plan, in `bytes_per_elem` (the alignment padding travels).
double plan_bytes(const GradSync& sync, double bytes_per_elem) {
  double n = 0;
  for (const GradBucket& b : sync.buckets()) n += double(b.numel()) * bytes_per_elem;
  return n;
}

TEST(BucketReducer, RegisteredReducerSelectedByOptionRunsOnEveryBucket) {
  register_test_reducer();
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto world = mpi_world();
  Options opt;
  opt.set("allreduce.reducer", "test_sum_then_scale");
  opt.set("allreduce.bucket_cap_mb", "0");  // one bucket per tensor
  const GradSyncOptions o = GradSyncOptions::from_options(opt, "allreduce.");
  EXPECT_EQ(o.reducer, "test_sum_then_scale");
  auto arena = make_arena({40, 3, 17});
  GradSync sync(*arena, world, o);
  ASSERT_EQ(sync.buckets().size(), 3u);
  auto& mine = dynamic_cast<SumThenScale&>(sync.reducer());
  EXPECT_EQ(sync.compressor(), nullptr);
  for (int t = 0; t < 2; ++t) {
    backward(*arena, R, t);
    sync.finish();
    expect_scaled_sum(*arena, W, t, kFactor, fmt::format("step {}", t));
  }
  EXPECT_EQ(mine.seen, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(mine.steps, 2);
  // Counted by the meter: one f32 allreduce per bucket and step; payload numel x 4 bytes; wire
  // bytes the ring's 2 (W - 1) / W of it.
  const CommStats s = sync.take_stats();
  const double payload = 2 * plan_bytes(sync, 4.0);
  EXPECT_EQ(s.collectives, 6);
  EXPECT_EQ(s.allreduces, 6);
  EXPECT_EQ(s.messages, 0);
  EXPECT_EQ(s.bytes_sent, payload);
  EXPECT_DOUBLE_EQ(s.wire_bytes, 2.0 * (W - 1) / W * payload);
  EXPECT_GE(s.in_flight_s, 0.0);
  EXPECT_EQ(sync.take_stats().collectives, 0) << "stats reset";
}

TEST(BucketReducer, SetReducerReplacesTheBuiltInBetweenPasses) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto world = mpi_world();
  auto arena = make_arena({12, 30});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  GradSync sync(*arena, world, o);
  EXPECT_EQ(sync.reducer().name(), "flat");
  backward(*arena, R, 0);
  sync.finish();
  expect_scaled_sum(*arena, W, 0, 1.0 / W, "flat average");
  sync.set_reducer(std::make_unique<SumThenScale>(0.5f));
  EXPECT_EQ(sync.reducer().name(), "test_sum_then_scale");
  backward(*arena, R, 1);
  sync.finish();
  expect_scaled_sum(*arena, W, 1, 0.5, "the set reducer");
  // Not while a pass is under way: the first tensor's hook has fired (its bucket is launched).
  backward(*arena, R, 2, /*fire=*/1);
  EXPECT_THROW(sync.set_reducer(std::make_unique<SumThenScale>(2.0f)), Error);
  sync.finish();
  expect_scaled_sum(*arena, W, 2, 0.5, "the reducer of the pass");
}

TEST(BucketReducer, BuiltInNamesAndContradictionsAreChecked) {
  register_test_reducer();
  auto names = bucket_reducer_names();
  for (const char* n : {"flat", "hierarchical", "powersgd", "topk", "test_sum_then_scale"})
    EXPECT_TRUE(std::find(names.begin(), names.end(), n) != names.end()) << n;
  EXPECT_THROW(register_bucket_reducer("topk", [](const ReducerSetup&) { return nullptr; }), Error);
  Options bad;
  bad.set("hybrid.reducer", "no_such_reducer");
  EXPECT_THROW(GradSyncOptions::from_options(bad, "hybrid."), Error);

  GradSyncOptions o;
  EXPECT_EQ(resolve_reducer_name(o), "flat");
  o.hierarchical = true;
  EXPECT_EQ(resolve_reducer_name(o), "hierarchical");
  o.compress.kind = "topk";
  EXPECT_EQ(resolve_reducer_name(o), "topk");
  o.reducer = "powersgd";  // the keys select topk
  EXPECT_THROW(resolve_reducer_name(o), Error);
  o.reducer = "test_sum_then_scale";  // a custom reducer takes no compression
  EXPECT_THROW(resolve_reducer_name(o), Error);
  o.compress.kind = "none";
  EXPECT_EQ(resolve_reducer_name(o), "test_sum_then_scale");
  o.reducer = "flat";  // the keys select hierarchical
  EXPECT_THROW(resolve_reducer_name(o), Error);

  // Built by GradSync: the names the options select.
  const int W = MpiEnv::get().world_size();
  Options topt;
  if (W % 2 == 0) topt.set("ranks_per_node", "2");
  auto topo = std::make_shared<Topology>(Topology::from_options(topt));
  auto arena = make_arena({8});
  GradSyncOptions h;
  h.hierarchical = true;
  GradSync hs(*arena, topo->world_ptr(), h, topo->node_ptr(), topo->cross_ptr());
  EXPECT_EQ(hs.reducer().name(), "hierarchical");
  GradSyncOptions c;
  c.compress.kind = "topk";
  GradSync cs(*arena, topo->world_ptr(), c);
  EXPECT_EQ(cs.reducer().name(), "topk");
  EXPECT_NE(cs.compressor(), nullptr);
}

// The built-in flat and hierarchical reducers in a 16-bit wire: payload and wire bytes in the
// wire type (2 bytes an element), by the meter's rules.
TEST(BucketReducer, BuiltInReducersAreCountedInTheWireType) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto world = mpi_world();
  auto arena = make_arena({100, 60});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  o.wire = DType::bf16;
  GradSync sync(*arena, world, o);
  backward(*arena, R, 0);
  sync.finish();
  const CommStats s = sync.take_stats();
  const double payload = plan_bytes(sync, 2.0);
  EXPECT_EQ(s.allreduces, 2);
  EXPECT_EQ(s.bytes_sent, payload);
  EXPECT_DOUBLE_EQ(s.wire_bytes, 2.0 * (W - 1) / W * payload);

  // Hierarchical on nodes of 2 (odd worlds: 1), one bucket of n elements padded to the node
  // size G: reduce-scatter of G c (c = ceil(n / G)) in the node, allreduce of c across the N
  // nodes, allgather of c in the node. Wire: (G-1)/G G c + 2 (N-1)/N c + (G-1) c.
  Options topt;
  topt.set("ranks_per_node", W % 2 == 0 ? "2" : "1");
  auto topo = std::make_shared<Topology>(Topology::from_options(topt));
  const int G = topo->ranks_per_node(), N = W / G;
  auto harena = make_arena({101});
  GradSyncOptions ho;
  ho.hierarchical = true;
  ho.wire = DType::bf16;
  GradSync hs(*harena, topo->world_ptr(), ho, topo->node_ptr(), topo->cross_ptr());
  ASSERT_EQ(hs.buckets().size(), 1u);
  backward(*harena, R, 0);
  hs.finish();
  const CommStats h = hs.take_stats();
  const double n = double(hs.buckets()[0].numel());
  if (G == 1) {  // the flat allreduce across nodes
    EXPECT_EQ(h.collectives, 1);
    EXPECT_EQ(h.bytes_sent, 2.0 * n);
    EXPECT_DOUBLE_EQ(h.wire_bytes, 2.0 * (N - 1) / N * 2.0 * n);
  } else {
    const double c = std::ceil(n / G);
    EXPECT_EQ(h.collectives, 3);
    EXPECT_EQ(h.allreduces, 1);
    EXPECT_EQ(h.bytes_sent, 2.0 * (G * c + c + c));
    EXPECT_DOUBLE_EQ(h.wire_bytes,
                     2.0 * (double(G - 1) / G * G * c + 2.0 * (N - 1) / N * c + double(G - 1) * c));
  }
}

}  // namespace
}  // namespace dplab
