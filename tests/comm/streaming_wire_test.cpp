// Streaming DiLoCo's quantised exchange (comm/algorithms/streaming_diloco.h, point 4) keeps the
// bytes each rank puts on its links O(n) at any world size: measured here on the ranks this test
// runs with (2 and 8), and computed for 8 and 32 ranks from the exchange's definition, against
// the f32 ring allreduce of the same fragments. "One outer step" is H inner steps: every
// fragment exchanged once.
#include <gtest/gtest.h>

#include <cstdio>
#include <utility>

#include "outer_step_harness.h"

namespace dplab {
namespace {

using namespace outer_step;

// Bytes of n values in a 4-bit format with blocks of B: one f32 scale per block, two values a
// byte.
double packed4(int64_t n, int64_t B) {
  return 4.0 * double((n + B - 1) / B) + double((n + 1) / 2);
}

// Per rank and outer step, from the definitions (not the meter's formulas):
//   quantised: per fragment of n values, shards of L = ⌈n/W⌉, W − 1 messages of packed4(L) and
//              an allgather whose ring sends W − 1 blocks of packed4(L);
//   f32 ring allreduce: 2 (W − 1)/W · 4n per fragment.
double int4_exchange(const std::vector<int64_t>& frags, int W, int64_t B) {
  double b = 0;
  for (int64_t n : frags) b += 2.0 * (W - 1) * packed4((n + W - 1) / W, B);
  return b;
}
double f32_allreduce(const std::vector<int64_t>& frags, int W) {
  double b = 0;
  for (int64_t n : frags) b += 2.0 * (W - 1) / W * 4.0 * double(n);
  return b;
}
// The exchange before issue #33: one allgather of every rank's whole payload.
double int4_allgather(const std::vector<int64_t>& frags, int W, int64_t B) {
  double b = 0;
  for (int64_t n : frags) b += (W - 1) * packed4(n, B);
  return b;
}

// The test model's two contiguous fragments and a ResNet-50's 25,557,032 parameters in two
// halves, at 8 and 32 ranks, blocks of 256 (the default): the quantised exchange stays below
// 0.3x the f32 allreduce's bytes (about 0.13x); the old allgather grows with W.
TEST(StreamingWire, Int4ExchangeIsAtMostAThirdOfF32AllreduceAt8And32Ranks) {
  Replica r(1);
  std::vector<int64_t> mnist;  // filled below
  for (const auto& [b, e] : arena_fragments(*r.arena, 2)) mnist.push_back(e - b);
  const std::vector<int64_t> resnet50 = {12778516, 12778516};
  for (const std::vector<int64_t>* frags : {&std::as_const(mnist), &resnet50}) {
    for (int W : {8, 32}) {
      const double q = int4_exchange(*frags, W, 256), f = f32_allreduce(*frags, W);
      const double old = int4_allgather(*frags, W, 256);
      EXPECT_LE(q, 0.3 * f) << W << " ranks";
      EXPECT_GT(old, 0.5 * f) << W << " ranks";  // why the exchange changed
      if (MpiEnv::get().world_rank() == 0)
        std::printf(
            "[streaming wire] n = %lld, %d ranks, per rank and outer step: int4 "
            "reduce-scatter/allgather %.0f B, f32 ring allreduce %.0f B (ratio %.3f); "
            "int4 allgather (before) %.0f B (ratio %.3f)\n",
            static_cast<long long>(frags->front() + frags->back()), W, q, f, q / f, old, old / f);
    }
  }
}

// Measured: the meter's comm_wire_bytes over one outer step (H = 4 inner steps, P = 2, τ = 1:
// fragment 0 sent after step 2, fragment 1 after step 4, applied at 3 and by the drain) with
// quantize = int4 and with the f32 allreduce, on the ranks this test runs with: the int4 figure
// is the definition's above and at most 0.3x the f32 one.
TEST(StreamingWire, MeasuredInt4WireBytesPerOuterStep) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto run = [&](const char* quantize) {
    Options o;
    o.set("streaming_diloco.H", "4");
    o.set("streaming_diloco.fragments", "2");
    o.set("streaming_diloco.fragment_sync_delay", "1");
    o.set("streaming_diloco.quantize", quantize);
    o.set("comm.timeout_s", "60");
    StreamingDiLoCoStrategy s(topology_of(o), o);
    Replica dist(11 + uint64_t(R));
    dist.set_up(s);
    s.take_stats();  // the setup broadcast
    s.begin_epoch(0);
    for (int64_t k = 0; k < 4; ++k) {
      StepInfo info{0, k, k, 4, 1};
      s.plan(info);
      dist.grad(R, 0, k);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
    }
    s.drain();  // fragment 1's exchange completed (applied after step 5, not reached)
    std::vector<int64_t> frags;
    for (const auto& f : s.fragments()) frags.push_back(fragment_numel(f));
    return std::make_pair(s.take_stats().wire_bytes, frags);
  };
  const auto [q, frags] = run("int4");
  const auto [f, frags_f32] = run("none");
  if (N == 1) return;
  EXPECT_EQ(q, int4_exchange(frags, N, 256));
  EXPECT_DOUBLE_EQ(f, f32_allreduce(frags, N));
  EXPECT_LE(q, 0.3 * f);
  if (R == 0)
    std::printf(
        "[streaming wire] measured, %d ranks, n = %lld: comm_wire_bytes per rank and "
        "outer step: int4 %.0f B, f32 allreduce %.0f B, ratio %.3f\n",
        N, static_cast<long long>(frags[0] + frags[1]), q, f, q / f);
}

}  // namespace
}  // namespace dplab
