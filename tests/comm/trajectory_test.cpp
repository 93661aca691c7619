// ALGORITHMS.md §1: K ranks with batch B follow the same trajectory as one rank with batch K*B
// (mnist_cnn has no BatchNorm), up to float rounding. Every rank also runs the serial K*B
// reference itself, so the comparison needs no extra communication.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"

#include <cmath>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/core/philox.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

constexpr int kB = 4;  // per-rank batch
constexpr int kSteps = 20;

using test::global_batch;

struct Replica : test::MnistReplica {
  explicit Replica(uint64_t seed) : MnistReplica(seed, 0.05, 0.9, 1e-4) {}
  void forward_backward(const Tensor& x, const Tensor& y) {
    Tensor loss = cross_entropy(model->forward(x), y);
    backward(loss);
  }
};

double rel_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    num += (double(va[i]) - vb[i]) * (double(va[i]) - vb[i]);
    den += double(vb[i]) * vb[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(Trajectory, KRanksBatchBEqualsOneRankBatchKB) {
  const int K = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  // The subject is the communication layer, so both replicas compute on the reference kernels:
  // their per-sample arithmetic does not depend on the batch size, while oneDNN's blocked AVX-512
  // convolutions round differently at batch 4 and 16 (about 1e-6 per gradient, see
  // core/cpu/conv.cpp), which 20 SGD steps amplify to about 2e-4 and would hide a real bug.
  BackendOverride reference_kernels(ref_backend());
  Options opt;
  opt.set("algo", "allreduce");
  opt.set("allreduce.bucket_cap_mb", "0.01");  // several buckets, overlapped with backward
  opt.set("allreduce.first_bucket_mb", "0.005");
  AllReduceStrategy strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  // Ranks start from different seeds: setup() must broadcast rank 0's parameters.
  Replica dist(1234 + R), serial(1234);
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  strategy.setup(ctx);
  ASSERT_GT(strategy.grad_sync().buckets().size(), 1u);
  ASSERT_EQ(rel_diff(dist.arena->params(), serial.arena->params()), 0.0);
  for (int step = 0; step < kSteps; ++step) {
    Tensor x, y;
    global_batch(step, K * kB, x, y);
    StepInfo info;
    info.global_step = step;
    dist.sgd->zero_grad();
    dist.forward_backward(x.slice(0, R * kB, (R + 1) * kB).contiguous(),
                          y.slice(0, R * kB, (R + 1) * kB).contiguous());
    strategy.after_backward(info);
    dist.sgd->step();
    serial.sgd->zero_grad();
    serial.forward_backward(x, y);
    serial.sgd->step();
  }
  const double d = rel_diff(dist.arena->params(), serial.arena->params());
  EXPECT_LT(d, 1e-5) << "rank " << R << " of " << K;
  // All ranks hold bitwise identical parameters.
  Tensor mine = dist.arena->params().clone(), maxed = dist.arena->params().clone();
  strategy.topology().world().allreduce(maxed, ReduceOp::max);
  EXPECT_EQ(rel_diff(mine, maxed), 0.0);
  if (R == 0)
    std::printf("[trajectory] %d ranks x batch %d vs 1 x %d: rel diff %.3g\n", K, kB, K * kB, d);
  const CommStats s = strategy.take_stats();
  EXPECT_EQ(s.allreduces, kSteps * static_cast<int64_t>(strategy.grad_sync().buckets().size()));
}

}  // namespace
}  // namespace dplab
