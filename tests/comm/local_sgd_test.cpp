// Local SGD and post-local SGD (comm/algorithms/local_sgd.h) on 2 and 4 ranks against a serial
// simulation of the N workers: local steps, the uniform parameter average after every H steps
// and at the end of every epoch; post-local SGD's first epochs average gradients every step.
// With local_sgd.round_spans_epochs the period runs on across epochs (ceil(total / H) averages,
// the last at the end of training) and every epoch's consensus evaluation sees the average of
// the ranks' models while each rank keeps its own.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

constexpr int kB = 4;

void batch(int rank, int64_t epoch, int64_t tick, Tensor& x, Tensor& y) {
  test::rank_batch(rank, epoch, tick, kB, x, y);
}

struct Replica : test::MnistReplica {
  explicit Replica(uint64_t seed) : MnistReplica(seed, 0.05, 0.9) {}
  void grad(int rank, int64_t epoch, int64_t tick) {
    Tensor x, y;
    batch(rank, epoch, tick, x, y);
    sgd->zero_grad();
    backward(cross_entropy(model->forward(x), y));
  }
};

// Replaces `pick(replica)` by the mean over the replicas.
template <typename Pick>
void average(std::vector<Replica>& reps, Pick pick) {
  std::vector<double> sum(size_t(reps[0].arena->numel()), 0.0);
  for (auto& r : reps) {
    auto v = pick(r).to_vector();
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  }
  std::vector<float> avg(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) avg[i] = float(sum[i] / double(reps.size()));
  for (auto& r : reps) {
    Tensor p = pick(r);  // a handle on the arena's storage
    p.copy_(Tensor::from_vector(avg, {int64_t(avg.size())}));
  }
}

double rel_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    num += (double(va[i]) - vb[i]) * (double(va[i]) - vb[i]);
    den += double(vb[i]) * vb[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

bool same_bytes_everywhere(const Tensor& params) {
  auto world_ptr = mpi_world();
  Communicator& world = *world_ptr;
  const int64_t n = params.numel();
  Tensor all =
      Tensor::from_vector(std::vector<float>(size_t(n * world.size()), 0.f), {n * world.size()});
  world.allgather(params, all);
  for (int r = 0; r < world.size(); ++r)
    if (std::memcmp(all.data<float>() + r * n, params.data<float>(), size_t(n) * 4) != 0)
      return false;
  return true;
}

struct Run {
  int64_t epochs, steps, H, switch_epoch;  // switch_epoch < 0: plain local SGD
  bool spans = false;                      // local_sgd.round_spans_epochs
};

// Returns the number of parameter averages.
int64_t check(const Run& run) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt;
  opt.set("local_sgd.H", std::to_string(run.H));
  opt.set("comm.timeout_s", "20");
  const bool post = run.switch_epoch >= 0;
  if (post) opt.set("post_local_sgd.switch_epoch", std::to_string(run.switch_epoch));
  if (run.spans) opt.set("local_sgd.round_spans_epochs", "true");
  LocalSgdStrategy s(std::make_shared<Topology>(Topology::from_options(opt)), opt, post);
  Replica dist(11 + uint64_t(R));  // setup() broadcasts rank 0's parameters
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  s.setup(ctx);

  std::vector<Replica> reps;
  for (int i = 0; i < N; ++i) reps.emplace_back(11);
  int64_t global = 0, serial_averages = 0, diverged_ticks = 0, consensus_evals = 0;
  int64_t since = 0;
  for (int64_t e = 0; e < run.epochs; ++e) {
    s.begin_epoch(e);
    const bool grad_phase = post && e < run.switch_epoch;
    EXPECT_EQ(s.in_allreduce_phase(), grad_phase);
    if (!run.spans) since = 0;
    for (int64_t k = 0; k < run.steps; ++k, ++global) {
      StepInfo info{e, k, global, run.steps, run.epochs};
      // Distributed.
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
      // Serial.
      for (int i = 0; i < N; ++i) reps[size_t(i)].grad(i, e, k);
      if (grad_phase) average(reps, [](Replica& r) { return r.arena->grads(); });
      for (auto& r : reps) r.sgd->step();
      if (!grad_phase && (++since == run.H || (!run.spans && k + 1 == run.steps))) {
        average(reps, [](Replica& r) { return r.arena->params(); });
        since = 0;
        ++serial_averages;
      } else if (!grad_phase && N > 1 && !same_bytes_everywhere(dist.arena->params())) {
        ++diverged_ticks;  // between averages the local models really differ
      }
    }
    s.end_epoch(e, 0.0);
    s.drain();
    // The consensus evaluation: the average of the ranks' models while it runs, this rank's own
    // (bitwise) after; only when rounds span epochs (otherwise every epoch ended averaged).
    const Tensor own = dist.arena->params().clone();
    const Tensor mean = test::mean_params(reps);
    double consensus_diff = -1;
    const bool ran =
        s.consensus_eval([&] { consensus_diff = rel_diff(dist.arena->params(), mean); });
    EXPECT_EQ(ran, run.spans && N > 1);
    if (ran) {
      ++consensus_evals;
      EXPECT_LT(consensus_diff, 1e-5) << "epoch " << e << " rank " << R;
    }
    EXPECT_EQ(
        std::memcmp(own.data<float>(), dist.arena->params().data<float>(), size_t(own.numel()) * 4),
        0)
        << "consensus_eval left another model in place";
    if (run.spans && N > 1 && since > 0) {
      // A round in progress at the epoch's end: the ranks' models differ.
      EXPECT_FALSE(same_bytes_everywhere(dist.arena->params())) << "epoch " << e;
    }
  }
  s.finish_training();
  if (since > 0) {  // the round in progress ends with training
    average(reps, [](Replica& r) { return r.arena->params(); });
    ++serial_averages;
  }
  const double d = rel_diff(dist.arena->params(), reps[size_t(R)].arena->params());
  EXPECT_LT(d, 1e-5) << "rank " << R;
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
  EXPECT_EQ(s.averages(), serial_averages);
  if (N > 1) {
    EXPECT_GT(diverged_ticks, 0);
  }
  if (run.spans && N > 1) {
    EXPECT_EQ(consensus_evals, run.epochs);
  }
  if (R == 0)
    std::printf("[local_sgd] %d ranks H %lld switch %lld: %lld averages, rel diff %.3g\n", N,
                (long long)run.H, (long long)run.switch_epoch, (long long)serial_averages, d);
  return serial_averages;
}

TEST(LocalSgd, AveragesEveryHStepsAndAtEpochEnd) {
  EXPECT_EQ(check({2, 7, 3, -1}), 6);  // averages after steps 3, 6, 7 of each epoch
}

TEST(LocalSgd, PostLocalSgdSwitchesFromGradientAllreduce) {
  check({3, 5, 2, 1});  // epoch 0 AllReduce-SGD, then local SGD with H = 2
}

// local_sgd.round_spans_epochs: 2 epochs of 7 steps, H = 3: averages after global steps 3, 6, 9,
// 12 and the end of training (14): ceil(14 / 3) = 5, where per-epoch rounds make 6 (3, 6, 7 of
// each epoch). The first epoch ends one step into a round: the rank models differ there.
TEST(LocalSgd, RoundSpanningEpochsAveragesEveryHStepsOfTheRun) {
  EXPECT_EQ(check({2, 7, 3, -1, true}), 5);
}

}  // namespace
}  // namespace dplab
