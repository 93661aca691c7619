// The side-by-side harness of the outer-step tests (outer_step_test.cpp: DiLoCo and SlowMo;
// streaming_diloco_test.cpp): a serial simulation of the N workers on the same batches as each
// rank's strategy, the round logic of comm/algorithms/periodic_sync.h written out, the outer
// step supplied by the test, and the comparisons (1e-5 relative: see outer_step_test.cpp).
#pragma once
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include "common/harness.h"
#include "common/mnist_replica.h"
#include "dplab/comm/algorithms/diloco.h"
#include "dplab/comm/algorithms/slowmo.h"
#include "dplab/comm/algorithms/streaming_diloco.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/optim/sgd.h"

namespace dplab::outer_step {

constexpr int kB = 4;

// The strategies take the topology the driver builds (issue #32).
inline std::shared_ptr<Topology> topology_of(const Options& o) {
  return std::make_shared<Topology>(Topology::from_options(o));
}
constexpr double kLr = 0.05;  // the inner (base) SGD's lr: SlowMo's γ

struct Replica : test::MnistReplica {
  explicit Replica(uint64_t seed) : MnistReplica(seed, kLr, 0.9) {}
  void grad(int rank, int64_t epoch, int64_t tick) {
    Tensor x, y;
    test::rank_batch(rank, epoch, tick, kB, x, y);
    sgd->zero_grad();
    backward(cross_entropy(model->forward(x), y));
  }
  std::vector<double> params() const {
    const auto v = arena->params().to_vector();
    return {v.begin(), v.end()};
  }
  // strategy.setup() on this replica's model, arena and optimizer (setup broadcasts rank 0's
  // parameters).
  void set_up(Strategy& strategy) {
    TrainContext ctx;
    ctx.model = model.get();
    ctx.arena = arena.get();
    ctx.optimizer = sgd.get();
    ctx.options = &no_options;
    strategy.setup(ctx);
  }
  Options no_options;
  void set_params(const std::vector<double>& p) {
    std::vector<float> f(p.begin(), p.end());
    Tensor t = arena->params();  // a handle on the arena's storage
    t.copy_(Tensor::from_vector(f, {int64_t(f.size())}));
  }
};

// The mean over the replicas of their parameters, in double.
inline std::vector<double> mean_params(const std::vector<Replica>& reps) {
  std::vector<double> sum(size_t(reps[0].arena->numel()), 0.0);
  for (const auto& r : reps) {
    const auto v = r.params();
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  }
  for (double& s : sum) s /= double(reps.size());
  return sum;
}

inline double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline std::vector<double> as_double(const Tensor& t) {
  const auto v = t.to_vector();
  return {v.begin(), v.end()};
}

inline bool same_bytes_everywhere(const Tensor& params) {
  auto world_ptr = mpi_world();
  Communicator& world = *world_ptr;
  const int64_t n = params.numel();
  Tensor all = Tensor::zeros({n * world.size()});
  world.allgather(params, all);
  for (int r = 0; r < world.size(); ++r)
    if (std::memcmp(all.data<float>() + r * n, params.data<float>(), size_t(n) * 4) != 0)
      return false;
  return true;
}

// The serial outer step after a round: the N local models in, the new global model out (every
// replica restarts from it).
using OuterStep = std::function<std::vector<double>(const std::vector<Replica>&)>;

struct Loop {
  int64_t epochs, steps, period;
  bool spans = false;  // rounds span epochs: the period runs on, training's end closes the last
};

// Runs `strategy` on this rank and the serial simulation side by side; returns the number of
// serial outer steps. Compares the models at the end.
inline int64_t run_both(Strategy& s, const Loop& loop, const OuterStep& outer, const char* what) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Replica dist(11 + uint64_t(R));  // setup() broadcasts rank 0's parameters
  dist.set_up(s);

  std::vector<Replica> reps;
  for (int i = 0; i < N; ++i) reps.emplace_back(11);
  int64_t global = 0, rounds = 0, diverged = 0, consensus_evals = 0;
  int64_t since = 0;
  for (int64_t e = 0; e < loop.epochs; ++e) {
    s.begin_epoch(e);
    if (!loop.spans) since = 0;
    for (int64_t k = 0; k < loop.steps; ++k, ++global) {
      StepInfo info{e, k, global, loop.steps, loop.epochs};
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
      for (int i = 0; i < N; ++i) reps[size_t(i)].grad(i, e, k);
      for (auto& r : reps) r.sgd->step();
      if (++since == loop.period || (!loop.spans && k + 1 == loop.steps)) {
        const std::vector<double> next = outer(reps);
        for (auto& r : reps) r.set_params(next);
        since = 0;
        ++rounds;
      } else if (N > 1 && !same_bytes_everywhere(dist.arena->params())) {
        ++diverged;  // inside a round the local models really differ
      }
    }
    s.end_epoch(e, 0.0);
    s.drain();
    // The consensus evaluation: the ranks' average while it runs, this rank's model after.
    const std::vector<double> own = as_double(dist.arena->params()), mean = mean_params(reps);
    double consensus_diff = -1;
    const bool ran =
        s.consensus_eval([&] { consensus_diff = rel_diff(as_double(dist.arena->params()), mean); });
    EXPECT_EQ(ran, loop.spans && N > 1) << what;
    if (ran) {
      ++consensus_evals;
      EXPECT_LT(consensus_diff, 1e-5) << what << ", epoch " << e;
    }
    EXPECT_EQ(as_double(dist.arena->params()), own) << what << ": consensus_eval kept its model";
  }
  s.finish_training();
  if (since > 0) {  // the round in progress ends with training
    const std::vector<double> next = outer(reps);
    for (auto& r : reps) r.set_params(next);
    ++rounds;
  }
  if (loop.spans && N > 1) {
    EXPECT_EQ(consensus_evals, loop.epochs) << what;
  }
  const double d = rel_diff(as_double(dist.arena->params()), reps[size_t(R)].params());
  EXPECT_LT(d, 1e-5) << what << ", rank " << R;
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params())) << what;
  if (N > 1 && loop.period > 1) {
    EXPECT_GT(diverged, 0) << what;
  }
  if (R == 0)
    std::printf("[%s] %d ranks: %lld outer steps, rel diff %.3g\n", what, N, (long long)rounds, d);
  return rounds;
}

}  // namespace dplab::outer_step
