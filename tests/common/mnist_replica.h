// One mnist_cnn training replica for multi-rank tests: model, ParamArena and SGD built the way
// the trainer builds them, so a test can also run every rank's steps serially as a reference.
#pragma once
#include <memory>
#include <vector>

#include "common/harness.h"
#include "dplab/core/param_arena.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab::test {

struct MnistReplica {
  std::shared_ptr<Module> model;
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  explicit MnistReplica(uint64_t seed, double lr = 0.05, double momentum = 0.9,
                        double weight_decay = 0.0) {
    model = make_model("mnist_cnn", seed);
    arena = std::make_unique<ParamArena>(model->named_parameters());
    SGDOptions o;
    o.lr = lr;
    o.momentum = momentum;
    o.weight_decay = weight_decay;
    sgd = std::make_unique<SGD>(*arena, o);
  }
};

// The mean over `reps` (MnistReplica or derived) of their parameters, summed in double, as one
// flat f32 tensor: the serial reference of a parameter average.
template <class R>
Tensor mean_params(const std::vector<R>& reps) {
  std::vector<double> sum(size_t(reps[0].arena->numel()), 0.0);
  for (const auto& r : reps) {
    const auto v = r.arena->params().to_vector();
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  }
  std::vector<float> avg(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) avg[i] = float(sum[i] / double(reps.size()));
  return Tensor::from_vector(avg, {int64_t(avg.size())});
}

// The global batch of step `step`: n images in [0, 1) and labels, the same on every rank (a
// serial run with batch n sees exactly what K ranks see together).
inline void global_batch(int step, int n, Tensor& x, Tensor& y) {
  std::vector<float> xv(static_cast<size_t>(n) * 28 * 28);
  std::vector<int64_t> yv(static_cast<size_t>(n));
  uint64_t h = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(step + 1);
  fill_xorshift(xv, h);
  for (int i = 0; i < n; ++i) yv[i] = static_cast<int64_t>((step * 7 + i * 3) % 10);
  x = Tensor::from_vector(xv, {n, 1, 28, 28});
  y = Tensor::from_vector_i64(yv, {n});
}

// Worker `rank`'s batch of n at (epoch, tick): deterministic, different per rank, so a serial
// reference can recompute any rank's data.
inline void rank_batch(int rank, int64_t epoch, int64_t tick, int n, Tensor& x, Tensor& y) {
  std::vector<float> xv(static_cast<size_t>(n) * 28 * 28);
  std::vector<int64_t> yv(static_cast<size_t>(n));
  uint64_t h = 0x9e3779b97f4a7c15ull * uint64_t(1 + rank * 1000 + epoch * 100 + tick);
  fill_xorshift(xv, h);
  for (int i = 0; i < n; ++i) yv[size_t(i)] = (rank * 3 + tick * 7 + i * 5 + epoch) % 10;
  x = Tensor::from_vector(xv, {n, 1, 28, 28});
  y = Tensor::from_vector_i64(yv, {n});
}

}  // namespace dplab::test
