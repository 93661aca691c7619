// GradSync on NCCL with a CUDA arena: bucketed averages (f32 and 16-bit wires) against serial
// sums, and K ranks x batch B following the same least-squares SGD trajectory as 1 rank x
// batch K*B. Gradients are computed on the host and copied into the device arena, then the
// grad-ready hooks fire in arena order, exactly as AccumulateGrad does; so this needs no CUDA
// op kernels beyond copies. Every rank skips (together) without a CUDA device per rank.
#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <mpi.h>
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"

#include <cmath>

#include "common/stream_gate.h"
#include "dplab/comm/bucket_reducer.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/nccl_communicator.h"
#include "dplab/core/device.h"
#include "dplab/core/philox.h"
#include "nccl_test_world.h"

namespace dplab {
namespace {

std::shared_ptr<Communicator> world() {
  return test::nccl_test_world();
}

Device dev() {
  return Device::cuda(nccl_local_device());
}

// Host values into a device tensor on the rank's own device (issue #19 item 6). The copy runs in
// the compute stream's order and is complete when copy_ returns; the comm stream reads after it
// (every post orders the comm stream after compute). Only the compute stream is waited for: a
// device-wide synchronisation would also wait out a stall the test put on the comm stream
// (issue #31: ExposedWaitComesFromTheDevice measured nothing that way).
void write(const Tensor& dst, const std::vector<float>& v) {
  Tensor d = dst;
  d.copy_(Tensor::from_vector(v, dst.shape()));
  cuda::wait_stream(cuda::compute_stream(dst.device().index), "test write", 60);
}

std::unique_ptr<ParamArena> make_arena(const std::vector<int64_t>& numels) {
  std::vector<NamedTensor> ps;
  for (size_t i = 0; i < numels.size(); ++i)
    ps.push_back({fmt::format("p{}", i), Tensor::zeros({numels[i]}, DType::f32, dev())});
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
}

// Writes each segment's gradient (host values from grad_of) into the device arena and fires its
// hooks, in arena order.
template <typename F>
void backward(ParamArena& arena, F grad_of) {
  for (size_t s = 0; s < arena.segments().size(); ++s) {
    const auto& seg = arena.segments()[s];
    write(seg.param.grad(), grad_of(int(s), seg.numel));
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
}

float grad_value(int r, int s, int64_t j) {  // exact in bf16: multiples of 1/8 below 32
  return static_cast<float>((r * 5 + s * 3 + j) % 29) / 8.0f;
}

TEST(NcclGradSync, AveragesFlatBucketsOnTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  const int W = c->size(), R = c->rank();
  for (DType wire : {DType::f32, DType::bf16, DType::f16})
    for (double cap : {0.0, 0.002}) {
      auto arena = make_arena({7, 300, 1, 1000, 33});
      GradSyncOptions o;
      o.first_bucket_mb = 0.001;
      o.bucket_cap_mb = cap;
      o.wire = wire;
      GradSync sync(*arena, c, o);
      for (int step = 0; step < 2; ++step) {
        backward(*arena, [&](int s, int64_t n) {
          std::vector<float> g(n);
          for (int64_t j = 0; j < n; ++j) g[j] = grad_value(R, s, j) * float(step + 1);
          return g;
        });
        sync.finish();
        const double tol = wire == DType::f32 ? 1e-6 : (W + 2) * std::ldexp(1.0, -8);
        int64_t bad = 0;
        for (size_t s = 0; s < arena->segments().size(); ++s) {
          auto v = arena->segments()[s].param.grad().to_vector();
          for (size_t j = 0; j < v.size(); ++j) {
            double e = 0;
            for (int r = 0; r < W; ++r) e += grad_value(r, int(s), int64_t(j));
            e *= double(step + 1) / W;
            if (std::abs(v[j] - e) > tol * std::abs(e) + 1e-6) ++bad;
          }
        }
        EXPECT_EQ(bad, 0) << "wire " << dtype_name(wire) << " cap " << cap << " step " << step;
      }
      EXPECT_GT(sync.take_stats().allreduces, 0);
    }
}

// Least squares, loss = mean over the batch of (x.w - y)^2 / 2 over D = 40 + 1 weights held in
// two parameters; the gradient of a batch is X^T (X w - y) / |batch|.
constexpr int kD = 40;
constexpr int kB = 4;
constexpr int kSteps = 8;
constexpr float kLr = 0.05f;

struct Sample {
  std::vector<float> x;
  float y;
};

Sample sample(int64_t index, int step) {
  PhiloxStream gen(7, uint64_t(step) * 100003 + uint64_t(index));
  Sample s;
  s.x.resize(kD + 1);
  float y = 0;
  for (int d = 0; d < kD; ++d) {
    s.x[d] = gen.uniform() * 2 - 1;
    y += s.x[d] * float(d % 5 - 2) * 0.3f;
  }
  s.x[kD] = 1;  // bias
  s.y = y + 0.5f;
  return s;
}

// Gradient over samples [begin, end) of step `step` at weights w.
std::vector<float> batch_grad(const std::vector<float>& w, int64_t begin, int64_t end, int step) {
  std::vector<double> g(w.size(), 0.0);
  for (int64_t i = begin; i < end; ++i) {
    const Sample s = sample(i, step);
    double pred = 0;
    for (size_t d = 0; d < w.size(); ++d) pred += double(s.x[d]) * w[d];
    const double err = pred - s.y;
    for (size_t d = 0; d < w.size(); ++d) g[d] += err * s.x[d];
  }
  std::vector<float> out(w.size());
  for (size_t d = 0; d < w.size(); ++d) out[d] = float(g[d] / double(end - begin));
  return out;
}

TEST(NcclGradSync, KRanksBatchBEqualsOneRankBatchKB) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  const int K = c->size(), R = c->rank();
  // Two parameters (weights, bias) in the device arena, one bucket each.
  auto arena = make_arena({kD, 1});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  GradSync sync(*arena, c, o);
  std::vector<float> serial(kD + 1, 0.0f);
  for (int step = 0; step < kSteps; ++step) {
    // Distributed: this rank's B samples, averaged over ranks by GradSync on the device.
    std::vector<float> w = arena->segments()[0].param.to_vector();
    w.push_back(arena->segments()[1].param.to_vector()[0]);
    const std::vector<float> mine = batch_grad(w, int64_t(R) * kB, int64_t(R + 1) * kB, step);
    backward(*arena, [&](int s, int64_t) {
      return s == 0 ? std::vector<float>(mine.begin(), mine.begin() + kD)
                    : std::vector<float>{mine[kD]};
    });
    sync.finish();
    for (int s = 0; s < 2; ++s) {
      const auto& seg = arena->segments()[s];
      auto p = seg.param.to_vector();
      auto g = seg.param.grad().to_vector();
      for (size_t j = 0; j < p.size(); ++j) p[j] -= kLr * g[j];
      write(seg.param, p);
    }
    // Serial: one rank, all K*B samples.
    const std::vector<float> all = batch_grad(serial, 0, int64_t(K) * kB, step);
    for (size_t d = 0; d < serial.size(); ++d) serial[d] -= kLr * all[d];
  }
  std::vector<float> got = arena->segments()[0].param.to_vector();
  got.push_back(arena->segments()[1].param.to_vector()[0]);
  double num = 0, den = 0;
  for (size_t d = 0; d < serial.size(); ++d) {
    num += (double(got[d]) - serial[d]) * (double(got[d]) - serial[d]);
    den += double(serial[d]) * serial[d];
  }
  ASSERT_GT(den, 0.0);
  EXPECT_LT(std::sqrt(num / den), 1e-5) << "K = " << K;
}

}  // namespace
}  // namespace dplab

namespace dplab {
namespace {

void sleep_200ms(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

// Issue #19 item 10: on NCCL the exposed wait is the compute stream's stall, and the time in
// flight the bucket's span from its start to the end of its allreduce, both measured with CUDA
// events. The comm stream is held up for 200 ms (a host function) before the buckets are posted,
// so the compute stream stands still for about that long in finish(), while the host returns
// from finish() at once: the host's clock would report almost nothing. The flat reducer runs in
// a CommStreamScope (issue #34), so its flight starts on the comm stream once that has waited
// for the gradients and for what it queued behind (docs/metrics_schema.md: "its post, or the
// end of the operation it queued behind"): the hold is wait, not flight. FlightHoldsTheBuckets
// OwnWork below holds the comm stream inside a bucket instead.
TEST(NcclGradSync, ExposedWaitComesFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  auto arena = make_arena({1000, 20});
  GradSyncOptions o;
  GradSync sync(*arena, c, o);
  ASSERT_EQ(cudaLaunchHostFunc(cuda::comm_stream(dev().index), sleep_200ms, nullptr), cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  backward(*arena, [&](int s, int64_t n) { return std::vector<float>(size_t(n), float(s + 1)); });
  sync.finish();
  const double host_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    cuda::ScopedDevice on(dev().index);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const CommStats st = sync.take_stats();
  EXPECT_GE(st.exposed_wait_s, 0.15) << "host time in backward + finish: " << host_s;
  EXPECT_LT(st.exposed_wait_s, 5.0);
  // In flight from the comm stream's start of each bucket (after the hold) to its end.
  EXPECT_GT(st.in_flight_s, 0.0);
  EXPECT_LT(st.in_flight_s, 0.15) << "the hold the buckets queued behind counted as flight";
  // Nothing is counted twice: the next window has no stall.
  const CommStats next = sync.take_stats();
  EXPECT_EQ(next.exposed_wait_s, 0.0);
  EXPECT_EQ(next.in_flight_s, 0.0);
}

// The hierarchical mode (issue #19, item 3): exposed wait and time in flight come from CUDA
// events as in the flat mode, with the same assertions as ExposedWaitComesFromTheDevice (since
// issue #34 its stages follow each other on the comm stream with no host wait in between). All
// ranks form one node (node size > 1, so the three-stage path runs); each rank is its own cross
// group. Needs 2 ranks (2 GPUs).
TEST(NcclGradSync, HierarchicalWaitAndFlightComeFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  if (c->size() < 2) GTEST_SKIP() << "the hierarchical stages need a node of 2 ranks";
  auto node = c->split(0, c->rank(), "node");
  auto cross = c->split(c->rank(), 0, "cross");
  auto arena = make_arena({1000, 21});  // 21: the padding to a multiple of the node size
  GradSyncOptions o;
  o.hierarchical = true;
  GradSync sync(*arena, c, o, node, cross);
  ASSERT_EQ(cudaLaunchHostFunc(cuda::comm_stream(dev().index), sleep_200ms, nullptr), cudaSuccess);
  // Rank r's gradient of segment s is (s + 1) * (r + 1): the average is (s + 1) * (K + 1) / 2.
  const int K = c->size(), r = c->rank();
  backward(*arena, [&](int s, int64_t n) {
    return std::vector<float>(size_t(n), float((s + 1) * (r + 1)));
  });
  sync.finish();
  {
    cuda::ScopedDevice on(dev().index);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  for (size_t s = 0; s < arena->segments().size(); ++s) {
    const std::vector<float> got = arena->segments()[s].param.grad().to_vector();
    const float want = float(s + 1) * float(K + 1) / 2.0f;
    for (float v : got) ASSERT_FLOAT_EQ(v, want) << "segment " << s;
  }
  const CommStats st = sync.take_stats();
  EXPECT_GE(st.exposed_wait_s, 0.15);
  EXPECT_LT(st.exposed_wait_s, 5.0);
  EXPECT_GT(st.in_flight_s, 0.0);
  EXPECT_LT(st.in_flight_s, 0.15) << "the hold the buckets queued behind counted as flight";
  const CommStats next = sync.take_stats();
  EXPECT_EQ(next.exposed_wait_s, 0.0);
  EXPECT_EQ(next.in_flight_s, 0.0);
}

// Issue #34: a bucket's own kernels (here the bf16 wire conversions; hierarchical, also the
// padding copy, the scaling and the copy back) run on the comm stream, after the compute
// stream's position when its gradients were ready and not after backward enqueued since. The
// gate stands for that backward: it holds the compute stream after the hooks fired. Before,
// those kernels ran on the compute stream and every post made the comm stream wait for it, so
// the buckets could not finish until backward did (the wait below would time out). Flat at any
// size; hierarchical (a node of all ranks) with 2 ranks or more.
TEST(NcclGradSync, BucketKernelsRunPastBackwardStillQueued) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  const int K = c->size(), r = c->rank();
  std::vector<bool> modes{false};
  if (K >= 2) modes.push_back(true);
  std::shared_ptr<Communicator> node, cross;
  if (K >= 2) {
    node = c->split(0, r, "node");
    cross = c->split(r, 0, "cross");
  }
  for (bool hierarchical : modes) {
    auto arena = make_arena({1000, 21});  // 21: hierarchical pads it to the node size
    GradSyncOptions o;
    o.wire = DType::bf16;
    o.hierarchical = hierarchical;
    GradSync sync(*arena, c, o, node, cross);
    // Rank r's gradient of segment s: (s + 1) * (r + 1), exact in bf16; the average over ranks
    // is (s + 1) * (K + 1) / 2.
    backward(*arena, [&](int s, int64_t n) {
      return std::vector<float>(size_t(n), float((s + 1) * (r + 1)));
    });
    test::StreamGate later_backward(cuda::compute_stream(dev().index));
    sync.finish();  // returns once the buckets are posted (both modes)
    cuda::wait_stream(cuda::comm_stream(dev().index), "the buckets on the comm stream", 20);
    const cudaError_t q = cudaStreamQuery(cuda::compute_stream(dev().index));
    if (q == cudaErrorNotReady) (void)cudaGetLastError();
    EXPECT_EQ(q, cudaErrorNotReady) << "the gate still holds compute";
    later_backward.release();
    for (size_t s = 0; s < arena->segments().size(); ++s) {
      const std::vector<float> got = arena->segments()[s].param.grad().to_vector();
      const float want = float(s + 1) * float(K + 1) / 2.0f;
      for (float v : got) ASSERT_EQ(v, want) << "segment " << s << " hierarchical " << hierarchical;
    }
  }
}

// A reducer whose bucket holds the comm stream for 200 ms after posting its allreduce: inside
// the bucket, so the hold is time in flight (and, as the compute stream waits for it in
// finish(), exposed wait), measured on the device.
class HeldFlatReducer : public BucketReducer {
 public:
  std::string name() const override { return "test_held_flat"; }
  bool stage_kernels_on_comm_stream() const override { return true; }
  void reduce(BucketView& bucket, BucketContext& ctx) override {
    Pending p = ctx.iallreduce(ctx.world(), bucket.grad, ReduceOp::average, ctx.wire());
    EXPECT_EQ(
        cudaLaunchHostFunc(cuda::launch_stream(bucket.grad.device().index), sleep_200ms, nullptr),
        cudaSuccess);
    ctx.complete(p);
  }
};

TEST(NcclGradSync, FlightHoldsTheBucketsOwnWork) {
  DPLAB_NCCL_TEST_GATE();
  auto c = world();
  if (!has_bucket_reducer("test_held_flat"))
    register_bucket_reducer(
        "test_held_flat", [](const ReducerSetup&) { return std::make_unique<HeldFlatReducer>(); });
  auto arena = make_arena({1000});
  GradSyncOptions o;
  o.reducer = "test_held_flat";
  GradSync sync(*arena, c, o);
  backward(*arena, [&](int, int64_t n) { return std::vector<float>(size_t(n), 1.0f); });
  sync.finish();
  {
    cuda::ScopedDevice on(dev().index);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const CommStats st = sync.take_stats();
  EXPECT_GE(st.in_flight_s, 0.15);
  EXPECT_LT(st.in_flight_s, 5.0);
  EXPECT_GE(st.exposed_wait_s, 0.15);
  EXPECT_LT(st.exposed_wait_s, 5.0);
  for (float v : arena->segments()[0].param.grad().to_vector()) ASSERT_EQ(v, 1.0f);
}

}  // namespace
}  // namespace dplab
