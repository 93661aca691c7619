// GradSync in virtual time (issue #20 item 4: "a bucket launched during backward that finishes
// before backward ends adds no exposed wait, one that does not adds exactly the excess").
// 4 ranks as 4 nodes on the test platform of virtual_world.h; two buckets of 4 MB (1e6 f32
// gradients each), so each bucket's ring allreduce lasts
//   2(P-1) alpha + 2(P-1)/P n/B = 6 x 10 us + 1.5 x 4e6 / 1e9 = 6.06 ms.
// The autograd engine is emulated as in grad_sync_test.cpp: write a segment's gradient, fire
// its grad-ready hooks; compute between them is added to the manual clock, and some ranks also
// sleep in real time, which must change nothing.
#include <chrono>
#include <thread>

#include "dplab/comm/grad_sync.h"
#include "virtual_world.h"

namespace dplab::test {
namespace {

constexpr int64_t kElems = 1000000;
constexpr double kRing4 = 6 * 10e-6 + 1.5 * 4e6 / 1e9;

std::unique_ptr<ParamArena> two_segments() {
  std::vector<NamedTensor> ps = {{"a", Tensor::zeros({kElems})}, {"b", Tensor::zeros({kElems})}};
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
}

GradSyncOptions one_bucket_per_segment() {
  GradSyncOptions o;
  o.first_bucket_mb = 1;  // a bucket closes at >= 1 MiB: each 4 MB segment is one
  o.bucket_cap_mb = 1;
  return o;
}

// "Backward": compute_before[s] seconds of compute, then segment s's gradient (rank + 1) and
// its hooks; then `tail` seconds of compute. Rank 1 also sleeps in real time (a loaded host).
void backward(ParamArena& arena, World& w, const std::vector<double>& compute_before, double tail) {
  const int R = w.comm->rank();
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    if (R == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    w.vt->clock.add_compute(compute_before[s]);
    const auto& seg = arena.segments()[s];
    Tensor g = seg.param.grad();
    float* p = g.data<float>();
    for (int64_t j = 0; j < seg.numel; ++j) p[j] = float(R + 1);
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
  w.vt->clock.add_compute(tail);
}

TEST(VirtualGradSync, ABucketEndingAfterBackwardAddsExactlyTheExcess) {
  World w = make_world(1);
  auto arena = two_segments();
  GradSync sync(*arena, w.comm, one_bucket_per_segment());
  ASSERT_EQ(sync.buckets().size(), 2u);
  // Bucket 0 ready at 2 ms: 2 .. 8.06 ms. Bucket 1 ready at 9 ms: 9 .. 15.06 ms. Backward ends
  // at 10 ms.
  backward(*arena, w, {2e-3, 7e-3}, 1e-3);
  sync.finish();
  EXPECT_TIME(clock_of(w), 9e-3 + kRing4);
  const CommStats s = sync.take_stats();
  EXPECT_TIME(s.exposed_wait_s, 9e-3 + kRing4 - 10e-3);  // 5.06 ms: the excess only
  EXPECT_TIME(s.in_flight_s, 2 * kRing4);                // start to end, both buckets
  // The gradients are averaged: (1 + 2 + 3 + 4) / 4.
  EXPECT_EQ(arena->grads().data<float>()[0], 2.5f);
  EXPECT_EQ(arena->grads().data<float>()[2 * kElems - 1], 2.5f);
}

TEST(VirtualGradSync, BucketsEndingBeforeBackwardAddNoExposedWait) {
  World w = make_world(1);
  auto arena = two_segments();
  GradSync sync(*arena, w.comm, one_bucket_per_segment());
  // Bucket 0 ready at 2 ms: 2 .. 8.06 ms; bucket 1 ready at 3 ms, queued behind it:
  // 8.06 .. 14.12 ms; backward ends at 20 ms.
  backward(*arena, w, {2e-3, 1e-3}, 17e-3);
  sync.finish();
  EXPECT_TIME(clock_of(w), 20e-3);
  const CommStats s = sync.take_stats();
  EXPECT_EQ(s.exposed_wait_s, 0.0);
  // In flight from each bucket's start to its end: 2 .. 8.06 and, queued, 8.06 .. 14.12 ms
  // (not from bucket 1's ready time, 3 ms: the queue is not flight).
  EXPECT_TIME(s.in_flight_s, 2 * kRing4);
}

TEST(VirtualGradSync, TheSameVirtualTimesOnAnotherStep) {
  // A second backward pass on the same GradSync starts from the clock where the first left it.
  World w = make_world(1);
  auto arena = two_segments();
  GradSync sync(*arena, w.comm, one_bucket_per_segment());
  backward(*arena, w, {2e-3, 7e-3}, 1e-3);
  sync.finish();
  const double t1 = clock_of(w);
  sync.take_stats();
  backward(*arena, w, {2e-3, 7e-3}, 1e-3);
  sync.finish();
  EXPECT_TIME(clock_of(w) - t1, 9e-3 + kRing4);
  EXPECT_TIME(sync.take_stats().exposed_wait_s, 9e-3 + kRing4 - 10e-3);
}

TEST(VirtualGradSync, HierarchicalStagesRunOneAfterAnother) {
  // 2 nodes x 2 ranks; two buckets of 4 MB. Per bucket, stage by stage:
  //   reduce-scatter in the node (2 ranks, intra): 1 x 1 us + 1/2 x 4e6 / 100e9 = 1 us + 20 us
  //   allreduce of the 2 MB shard across the 2 nodes, both local ranks at once through one
  //     interface (0.5 GB/s each): 2 x 1 x 10 us + 1 x 2e6 / 0.5e9 = 20 us + 4 ms
  //   allgather in the node of the 4 MB: 1 us + 20 us
  // = 4.062 ms per bucket; the node and cross communicators each queue their own stages.
  World w = make_world(2);
  const int R = w.comm->rank();
  auto node = w.comm->split(R / 2, R, "node");
  auto cross = w.comm->split(R % 2, R / 2, "cross");
  auto arena = two_segments();
  GradSyncOptions o = one_bucket_per_segment();
  o.hierarchical = true;
  GradSync sync(*arena, w.comm, o, node, cross);
  // Bucket 0 ready at 1 ms: ends 5.062 ms. Bucket 1 ready at 2 ms: its reduce-scatter waits
  // for the node communicator's previous operation (bucket 0's allgather, ending 5.062 ms):
  // ends 5.062 + 4.062 = 9.124 ms. Backward ends at 3 ms.
  const double bucket = 21e-6 + 4.02e-3 + 21e-6;
  backward(*arena, w, {1e-3, 1e-3}, 1e-3);
  sync.finish();
  EXPECT_TIME(clock_of(w), 1e-3 + 2 * bucket);
  EXPECT_TIME(sync.take_stats().exposed_wait_s, 1e-3 + 2 * bucket - 3e-3);
  EXPECT_EQ(arena->grads().data<float>()[0], 2.5f);
}

}  // namespace
}  // namespace dplab::test
