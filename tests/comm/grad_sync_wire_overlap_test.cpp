// GradSync under mpiexec: (1) the 16-bit wire is really used: gradients that bf16 and f16
// cannot hold come back rounded to what they can, and half the bytes of f32 are counted; (2)
// buckets are launched during a real backward pass (the autograd engine's own hooks on
// mnist_cnn), not only at finish(): a recording communicator notes when each allreduce is
// posted and the test compares that with the end of backward.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "forwarding_communicator.h"

namespace dplab {
namespace {

using Clock = std::chrono::steady_clock;

// Element j of segment s: v = 1 + ((s + j) mod 8)/8 (4 significant bits: exact in bf16 and f16,
// and so are the sums of up to 8 of them) plus d = 2^-13, which neither can hold next to a value
// in [1, 2) (half an ulp is 2^-8 in bf16, 2^-11 in f16). Every rank sends the same value, so:
//   f32 wire:       the average is v + d exactly (W (v + d) is exact in f32, and so is / W);
//   bf16/f16 wire:  each rank sends round(v + d) = v, partial sums k v are exact, the average
//                   is v exactly, whatever the reduction order.
constexpr double kD = 1.0 / 8192.0;
double base_value(int s, int64_t j) {
  return 1.0 + double((s + j) % 8) / 8.0;
}

struct WireRun {
  std::unique_ptr<ParamArena> arena;
  CommStats stats;
  explicit WireRun(DType wire) {
    std::vector<NamedTensor> ps;
    for (int i = 0; i < 3; ++i) ps.push_back({fmt::format("p{}", i), Tensor::zeros({37 + 10 * i})});
    arena = std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
    GradSyncOptions o;
    o.wire = wire;
    o.first_bucket_mb = 0;
    o.bucket_cap_mb = 0;  // one bucket per tensor
    GradSync sync(*arena, mpi_world(), o);
    for (size_t s = 0; s < arena->segments().size(); ++s) {
      const auto& seg = arena->segments()[s];
      Tensor g = seg.param.grad();
      float* p = g.data<float>();
      for (int64_t j = 0; j < seg.numel; ++j) p[j] = float(base_value(int(s), j) + kD);
      for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
    }
    sync.finish();
    stats = sync.take_stats();
  }
};

TEST(GradSyncWire, SixteenBitWireRoundsAndHalvesTheBytes) {
  const WireRun f32(DType::f32), bf16(DType::bf16), f16(DType::f16);
  int64_t numel = 0;
  for (const auto& seg : f32.arena->segments()) {
    numel += seg.numel;
    const auto a = f32.arena->grads().flat_range(seg.offset, seg.offset + seg.numel).to_vector();
    const auto b = bf16.arena->grads().flat_range(seg.offset, seg.offset + seg.numel).to_vector();
    const auto h = f16.arena->grads().flat_range(seg.offset, seg.offset + seg.numel).to_vector();
    const int s = int(&seg - &f32.arena->segments()[0]);
    for (int64_t j = 0; j < seg.numel; ++j) {
      const double v = base_value(s, j);
      ASSERT_EQ(double(a[size_t(j)]), v + kD) << "f32 wire, segment " << s << " element " << j;
      ASSERT_EQ(double(b[size_t(j)]), v) << "bf16 wire, segment " << s << " element " << j;
      ASSERT_EQ(double(h[size_t(j)]), v) << "f16 wire, segment " << s << " element " << j;
      ASSERT_EQ(double(a[size_t(j)]) - double(b[size_t(j)]), kD);
    }
  }
  if (MpiEnv::get().world_size() > 1) {
    EXPECT_EQ(f32.stats.bytes_sent, 4.0 * double(numel));
    EXPECT_EQ(bf16.stats.bytes_sent, 2.0 * double(numel));
    EXPECT_EQ(f16.stats.bytes_sent, 2.0 * double(numel));
  }
}

// Forwards everything to `inner` and records when each iallreduce is posted, and its size.
class RecordingCommunicator : public test::Forwarding {
 public:
  using Forwarding::Forwarding;
  Request iallreduce(const Tensor& t, ReduceOp op, std::optional<DType> wire) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      posts_.push_back({Clock::now(), t.numel()});
    }
    return Forwarding::iallreduce(t, op, wire);
  }

  struct Post {
    Clock::time_point t;
    int64_t numel;
  };
  std::vector<Post> posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }

 private:
  std::mutex mu_;
  std::vector<Post> posts_;
};

// mnist_cnn, one bucket per tensor, a real forward and backward. The first layer's weight is
// the last gradient backward produces; a hook on it (registered before GradSync's, so it runs
// first) holds backward there for 0.4 s, a stand-in for the rest of a deep model's backward.
// Every bucket but the last is complete by then, so the communication thread must have posted
// the first bucket's allreduce before backward returns. Posts come in bucket order with the
// buckets' sizes.
TEST(GradSyncOverlap, BucketsArePostedDuringARealBackward) {
  auto model = make_model("mnist_cnn", 7);
  ParamArena arena(model->named_parameters());
  auto rec = std::make_shared<RecordingCommunicator>(mpi_world());
  auto params = model->named_parameters();
  Clock::time_point hold_begin{};
  params.front().tensor.register_grad_ready_hook([&](const Tensor&) {
    hold_begin = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  });
  GradSyncOptions o;
  o.first_bucket_mb = 0;
  o.bucket_cap_mb = 0;
  GradSync sync(arena, rec, o);
  ASSERT_GE(sync.buckets().size(), 3u);
  std::vector<float> xv(size_t(4 * 28 * 28));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float((i * 7 + size_t(rec->rank())) % 13) / 13.f;
  const Tensor x = Tensor::from_vector(xv, {4, 1, 28, 28});
  const Tensor y = Tensor::from_vector_i64({1, 3, 5, 7}, {4});
  backward(cross_entropy(model->forward(x), y));
  const Clock::time_point backward_end = Clock::now();
  sync.finish();
  const auto posts = rec->posts();
  ASSERT_EQ(posts.size(), sync.buckets().size());
  for (size_t b = 0; b < posts.size(); ++b)
    EXPECT_EQ(posts[b].numel, sync.buckets()[b].numel()) << "bucket " << b;
  ASSERT_NE(hold_begin, Clock::time_point{}) << "the first layer's hook never ran";
  EXPECT_LT(posts.front().t, backward_end) << "no bucket was posted before backward ended";
  EXPECT_LT(posts.front().t, hold_begin + std::chrono::milliseconds(400))
      << "the first bucket waited for the end of backward";
  // The last bucket holds the first layer's gradient: not ready before the hold.
  EXPECT_GE(posts.back().t, hold_begin);
}

}  // namespace
}  // namespace dplab
