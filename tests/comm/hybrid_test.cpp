// Hybrid parallel SGD (ALGORITHMS.md §2) on K ranks against serial computations:
//  - allreduce counts equal the closed-form count of the chosen split/counter (+1 final average),
//  - stage 2: W accumulated micro-steps equal one step on the W-times-larger batch,
//  - stage 3: every R-th gradient is the mean of the ranks' own gradients, the others are local,
//    the models diverge, and the final parameter average is their exact mean, done once.
// The training loop's call order (comm/strategy.h) is reproduced by iterate().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dplab/comm/algorithms/hybrid.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

int world_size() {
  return MpiEnv::get().world_size();
}
int world_rank() {
  return MpiEnv::get().world_rank();
}

StepInfo step_info(int64_t E, int64_t n, int64_t global) {
  StepInfo s;
  s.epoch = global / n;
  s.step_in_epoch = global % n;
  s.global_step = global;
  s.steps_per_epoch = n;
  s.total_epochs = E;
  return s;
}

// One iteration in the order of the training loop; `fwd_bwd` produces the gradient.
template <class F>
StepPlan iterate(Strategy& s, Optimizer& opt, const StepInfo& info, F&& fwd_bwd) {
  const StepPlan p = s.plan(info);
  if (p.zero_grad) opt.zero_grad();
  s.before_forward(info);
  fwd_bwd();
  s.after_backward(info);
  if (p.optimizer_step) opt.step();
  s.after_step(info);
  return p;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Every rank's copy of `t`, gathered on every rank.
std::vector<std::vector<float>> gather(Communicator& comm, const Tensor& t) {
  const int K = comm.size();
  Tensor send = t.contiguous().clone();
  Tensor recv = Tensor::zeros({K * t.numel()});
  comm.allgather(send, recv);
  auto all = recv.to_vector();
  std::vector<std::vector<float>> out(K);
  for (int k = 0; k < K; ++k)
    out[k].assign(all.begin() + k * t.numel(), all.begin() + (k + 1) * t.numel());
  return out;
}

// True iff `t` is bitwise the same on every rank (max over ranks equals mine).
bool same_on_all_ranks(Communicator& comm, const Tensor& t) {
  Tensor mx = t.clone();
  comm.allreduce(mx, ReduceOp::max);
  return rel_diff(t.to_vector(), mx.to_vector()) == 0.0;
}

// ---- allreduce counts (a small arena, gradients written by hand) ---------------------------

// Multiples of m in [a, b).
int64_t multiples(int64_t a, int64_t b, int64_t m) {
  return (b + m - 1) / m - (a + m - 1) / m;
}

// Closed-form number of gradient allreduces of a run, written independently of
// hybrid_stage/hybrid_schedule: stage epoch ranges [0, e1), [e1, e2), [e2, E).
int64_t expected_syncs(const HybridConfig& c, int64_t E, int64_t n) {
  if (c.mode == HybridMode::each_iter) return E * n;
  if (c.mode == HybridMode::only_end) return 0;
  int64_t e1, e2;
  if (c.split == HybridSplit::ceil) {
    const int64_t S = (E + 2) / 3;
    e1 = S;
    e2 = std::min(2 * S + 1, E);
  } else {
    e1 = E / 3;
    e2 = 2 * E / 3;
  }
  if (c.counter == HybridCounter::global)
    return e1 * n + multiples(e1 * n, e2 * n, c.W) + multiples(e2 * n, E * n, c.R);
  return e1 * n + (e2 - e1) * (n / c.W) + (E - e2) * (n / c.R);
}

struct CountCase {
  std::string mode, split, counter;
  int64_t W, R, E, n;
};

TEST(HybridCounts, AllreducesMatchTheFormula) {
  const int K = world_size(), rank = world_rank();
  const std::vector<CountCase> cases = {
      {"hybrid", "ceil", "global", 8, 12, 20, 10},  // 70 + 10 + 4 (see hybrid_schedule_test)
      {"hybrid", "ceil", "global", 3, 5, 16, 7},    // E not divisible by 3
      {"hybrid", "thirds", "global", 4, 3, 10, 7},  //
      {"hybrid", "ceil", "epoch", 4, 3, 7, 9},      // no stage 3 (S = 3, stage 2 = [3, 6])
      {"hybrid", "thirds", "epoch", 2, 4, 5, 9},    //
      {"only_end", "ceil", "global", 8, 12, 5, 4},  //
      {"each_iter", "ceil", "global", 8, 12, 4, 4},
  };
  for (const auto& cc : cases) {
    Options opt;
    opt.set("hybrid.mode", cc.mode);
    opt.set("hybrid.split", cc.split);
    opt.set("hybrid.counter", cc.counter);
    opt.set("hybrid.W", std::to_string(cc.W));
    opt.set("hybrid.R", std::to_string(cc.R));
    const std::string what = fmt::format("{} {} {} W={} R={} E={} n={}", cc.mode, cc.split,
                                         cc.counter, cc.W, cc.R, cc.E, cc.n);
    std::vector<NamedTensor> ps = {{"w", Tensor::full({37}, 0.5)}, {"b", Tensor::full({5}, 1.0)}};
    ParamArena arena(ps, ParamArena::Layout::given_order);
    SGDOptions so;
    so.lr = 0.1;
    so.momentum = 0.9;
    so.nesterov = true;
    SGD sgd(arena, so);
    // After the arena: the strategy's GradSync refers to it and must go first (ASan found the
    // reverse order reading a freed arena from the communication thread).
    HybridStrategy strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
    TrainContext ctx;
    ctx.arena = &arena;
    ctx.optimizer = &sgd;
    ctx.options = &opt;
    strategy.setup(ctx);
    ASSERT_EQ(strategy.grad_sync().buckets().size(), 1u) << what;
    CommStats total = strategy.take_stats();
    EXPECT_EQ(total.allreduces, 0) << what;  // the setup broadcast is not an allreduce
    EXPECT_EQ(total.collectives, 1) << what;
    int64_t steps = 0;
    for (int64_t g = 0; g < cc.E * cc.n; ++g) {
      const StepInfo info = step_info(cc.E, cc.n, g);
      const StepPlan p = iterate(strategy, sgd, info, [&] {
        // A rank- and iteration-dependent gradient, accumulated like AccumulateGrad.
        float* gp = arena.grads().data<float>();
        for (int64_t i = 0; i < arena.numel(); ++i)
          gp[i] += 0.01f * float((rank * 7 + g * 3 + i) % 11) - 0.05f;
      });
      steps += p.optimizer_step;
      if (info.last_in_epoch()) {
        if (g + 1 == cc.E * cc.n) strategy.finish_training();
        strategy.drain();
        total.add(strategy.take_stats());
      }
    }
    const HybridConfig& hc = strategy.config();
    const int64_t final_avg = cc.mode == "each_iter" ? 0 : 1;
    EXPECT_EQ(total.allreduces, expected_syncs(hc, cc.E, cc.n) + final_avg) << what;
    EXPECT_EQ(total.collectives, total.allreduces + 1) << what;
    EXPECT_EQ(strategy.state().at("syncs"), double(expected_syncs(hc, cc.E, cc.n))) << what;
    EXPECT_EQ(strategy.state().at("final_averaged"), double(final_avg)) << what;
    // Every rank ends with the same model.
    EXPECT_TRUE(same_on_all_ranks(strategy.topology().world(), arena.params())) << what;
    // A second finish_training() communicates nothing more.
    strategy.finish_training();
    strategy.drain();
    EXPECT_EQ(strategy.take_stats().allreduces, 0) << what;
    if (rank == 0)
      std::printf(
          "[hybrid counts] %-40s K=%d: %lld allreduces of %lld iterations (%.3f), %lld "
          "steps\n",
          what.c_str(), K, (long long)total.allreduces, (long long)(cc.E * cc.n),
          double(total.allreduces) / double(cc.E * cc.n), (long long)steps);
  }
}

// ---- mnist_cnn (no BatchNorm) ----------------------------------------------------------------

constexpr int kB = 2;  // per-rank batch

// Sample `i` of iteration `it`: a deterministic image in [0, 1) and label.
void sample(int64_t it, int64_t i, float* img, int64_t& label) {
  uint64_t h = 0x9e3779b97f4a7c15ull * uint64_t(it + 1) + 0x632be59bd9b4e019ull * uint64_t(i + 1);
  for (int p = 0; p < 28 * 28; ++p) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    img[p] = float(h % 1000) / 1000.0f;
  }
  label = (it * 7 + i * 3) % 10;
}

// Samples [first, first + count) of each iteration in `its`, concatenated.
void make_batch(const std::vector<int64_t>& its, int64_t first, int64_t count, Tensor& x,
                Tensor& y) {
  const int64_t n = int64_t(its.size()) * count;
  std::vector<float> xv(static_cast<size_t>(n) * 28 * 28);
  std::vector<int64_t> yv(static_cast<size_t>(n));
  int64_t j = 0;
  for (int64_t it : its)
    for (int64_t i = first; i < first + count; ++i, ++j) sample(it, i, &xv[size_t(j) * 784], yv[j]);
  x = Tensor::from_vector(xv, {n, 1, 28, 28});
  y = Tensor::from_vector_i64(yv, {n});
}

struct Net {
  std::shared_ptr<Module> model;
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  Net(uint64_t seed, const SGDOptions& o) {
    model = make_model("mnist_cnn", seed);
    arena = std::make_unique<ParamArena>(model->named_parameters());
    sgd = std::make_unique<SGD>(*arena, o);
    sgd->set_lr(o.lr);
  }
  // Mean cross-entropy over the batch, backward (gradients accumulate).
  void fwd_bwd(const Tensor& x, const Tensor& y) { backward(cross_entropy(model->forward(x), y)); }
};

// accumulate_mean = false: the thesis code's sum; true: hybrid.accumulate = mean.
void check_stage2_against_big_batch(bool accumulate_mean) {
  // E = 3, ceil split: S = 1, epoch 0 = stage 1 (it 0..7), epochs 1-2 = stage 2. W = 4, n = 8,
  // global counter: syncs at it 8, 12, 16. Plain SGD (no momentum), lr 0.05.
  // What is equal: each stage-2 step uses (1/K) sum_k sum_{w=1..W} grad(mean loss of rank k's
  // micro-batch w) = W * grad(mean loss over the W*K*B batch), i.e. the sum over the window of
  // the K-rank mean gradients, not divided by W. So W micro-steps with lr equal ONE step with
  // lr*W on the W*K*B-sample batch with mean loss (up to float rounding).
  const int K = world_size(), R = world_rank();
  constexpr int64_t E = 3, n = 8, W = 4;
  constexpr double lr = 0.05;
  Options opt;
  opt.set("hybrid.W", std::to_string(W));
  opt.set("hybrid.accumulate", accumulate_mean ? "mean" : "sum");
  // With accumulate = mean every synced stage-2 step is divided by W: the big-batch step then
  // uses lr itself, and the carried step at it = 8 uses lr / W.
  const double big_lr = accumulate_mean ? lr : lr * W;
  HybridStrategy strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  SGDOptions so;
  so.lr = lr;
  Net dist(1234 + R, so), serial(1234, so);  // setup() broadcasts rank 0's parameters
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  strategy.setup(ctx);
  strategy.take_stats();
  ASSERT_EQ(rel_diff(dist.arena->params().to_vector(), serial.arena->params().to_vector()), 0.0);

  Tensor x, y;
  for (int64_t it = 0; it <= 16; ++it) {
    const StepInfo info = step_info(E, n, it);
    const auto before = dist.arena->params().to_vector();
    iterate(strategy, *dist.sgd, info, [&] {
      make_batch({it}, R * kB, kB, x, y);  // rank R's slice of the global batch of `it`
      dist.fwd_bwd(x, y);
    });
    const int64_t ar = strategy.take_stats().allreduces;
    const bool sync = it < 8 || it % W == 0;
    EXPECT_EQ(ar, sync ? 1 : 0) << "it " << it;
    EXPECT_EQ(strategy.state().at("stage"), it < 8 ? 1.0 : 2.0) << "it " << it;
    if (!sync) {
      // Accumulating: no communication, no step.
      EXPECT_EQ(rel_diff(dist.arena->params().to_vector(), before), 0.0) << "it " << it;
      continue;
    }
    if (it <= 8) {
      // Stage 1 = P-SGD on the K*B batch. it = 8 starts stage 2 on top of the last stage-1
      // gradient (carry_grad, thesis code): one step on grad(it 7) + grad(it 8).
      if (it != 8) serial.sgd->zero_grad();
      make_batch({it}, 0, int64_t(K) * kB, x, y);
      serial.fwd_bwd(x, y);
      if (it == 8 && accumulate_mean) serial.sgd->set_lr(lr / W);
      serial.sgd->step();
      serial.sgd->set_lr(lr);
    } else {
      // One step with lr*W on the W*K*B batch of iterations it-W+1 .. it.
      std::vector<int64_t> window;
      for (int64_t w = it - W + 1; w <= it; ++w) window.push_back(w);
      serial.sgd->zero_grad();
      make_batch(window, 0, int64_t(K) * kB, x, y);
      serial.fwd_bwd(x, y);
      serial.sgd->set_lr(big_lr);
      serial.sgd->step();
      serial.sgd->set_lr(lr);
    }
    const double d = rel_diff(dist.arena->params().to_vector(), serial.arena->params().to_vector());
    EXPECT_LT(d, 2e-5) << "it " << it << " rank " << R;
    if (R == 0 && it >= 12)
      std::printf(
          "[hybrid stage 2, %s] K=%d it %lld: %lld accumulated micro-steps vs one %lld-sample "
          "step: rel diff %.3g\n",
          accumulate_mean ? "mean" : "sum", K, (long long)it, (long long)W, (long long)(W * K * kB),
          d);
  }
  EXPECT_TRUE(same_on_all_ranks(strategy.topology().world(), dist.arena->params()));
}

TEST(HybridStage2, WAccumulatedMicroStepsEqualOneBigBatchStep) {
  check_stage2_against_big_batch(false);
}

TEST(HybridStage2, AccumulateMeanEqualsOneBigBatchStepWithTheSameLr) {
  check_stage2_against_big_batch(true);
}

TEST(HybridStage3, ModelsDivergeAndTheFinalAverageIsTheirMean) {
  // E = 3, thirds split: epoch 0 = stage 1, 1 = stage 2, 2 = stage 3 (it 12..17); W = 3, R = 4,
  // global counter: stage 3 syncs at it 12 and 16. Nesterov momentum 0.9 (the thesis setting);
  // every rank reads its own samples.
  const int K = world_size(), R = world_rank();
  constexpr int64_t E = 3, n = 6;
  Options opt;
  opt.set("hybrid.W", "3");
  opt.set("hybrid.R", "4");
  opt.set("hybrid.split", "thirds");
  HybridStrategy strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  so.nesterov = true;
  Net dist(99 + R, so), probe(7, so);
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  strategy.setup(ctx);
  Communicator& world = strategy.topology().world();

  Tensor x, y;
  for (int64_t it = 0; it < E * n; ++it) {
    const StepInfo info = step_info(E, n, it);
    const int stage = int(it / n) + 1;
    make_batch({it}, R * kB, kB, x, y);
    if (stage < 3) {
      iterate(strategy, *dist.sgd, info, [&] { dist.fwd_bwd(x, y); });
      EXPECT_TRUE(same_on_all_ranks(world, dist.arena->params())) << "it " << it;
      continue;
    }
    // The rank's own gradient at its own parameters, computed on a separate replica.
    Tensor probe_params = probe.arena->params();
    probe_params.copy_(dist.arena->params());
    probe.sgd->zero_grad();
    probe.fwd_bwd(x, y);
    const auto mine = probe.arena->grads().to_vector();
    const auto all = gather(world, probe.arena->grads());

    const StepPlan p = strategy.plan(info);
    EXPECT_TRUE(p.zero_grad && p.optimizer_step) << "it " << it;
    EXPECT_EQ(strategy.state().at("stage"), 3.0);
    if (p.zero_grad) dist.sgd->zero_grad();
    dist.fwd_bwd(x, y);
    strategy.after_backward(info);
    const auto got = dist.arena->grads().to_vector();
    if (it % 4 == 0) {
      // Averaged over all ranks, each evaluated at its own parameters (serial mean in double).
      std::vector<float> mean(got.size());
      for (size_t i = 0; i < got.size(); ++i) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += all[k][i];
        mean[i] = float(s / K);
      }
      EXPECT_LT(rel_diff(got, mean), 1e-5) << "it " << it;
    } else {
      EXPECT_LT(rel_diff(got, mine), 1e-6) << "it " << it;  // purely local
    }
    if (p.optimizer_step) dist.sgd->step();
    strategy.after_step(info);
  }
  EXPECT_EQ(strategy.take_stats().allreduces, 6 + 2 + 2);  // stage 1: 6, stage 2: it 6, 9; 3: 2
  strategy.drain();  // per-epoch drain: rank 0's model stays rank 0's
  const auto before = gather(world, dist.arena->params());
  if (K > 1) {
    EXPECT_FALSE(same_on_all_ranks(world, dist.arena->params())) << "models should diverge";
    double spread = 0;
    for (size_t i = 0; i < before[0].size(); ++i)
      spread = std::max(spread, std::abs(double(before[1][i]) - before[0][i]));
    if (R == 0) std::printf("[hybrid stage 3] K=%d: max |theta_1 - theta_0| = %.3g\n", K, spread);
  }
  EXPECT_EQ(strategy.take_stats().allreduces, 0);  // drain() did not average

  strategy.finish_training();
  const auto after = dist.arena->params().to_vector();
  double worst = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    double s = 0, mag = 0;
    for (int k = 0; k < K; ++k) {
      s += before[k][i];
      mag = std::max(mag, std::abs(double(before[k][i])));
    }
    // The allreduce sums in float (in some order) and scales by 1/K: a few ulps of the
    // largest term.
    worst = std::max(worst, std::abs(after[i] - s / K) / (mag * K * 1.2e-7 + 1e-30));
  }
  EXPECT_LE(worst, 1.0) << "final average is not the mean of the ranks' models";
  EXPECT_TRUE(same_on_all_ranks(world, dist.arena->params()));
  EXPECT_EQ(strategy.take_stats().allreduces, 1);
  // Exactly once: a second call and the final drain leave the model and the counts alone.
  strategy.finish_training();
  strategy.drain();
  EXPECT_EQ(strategy.take_stats().allreduces, 0);
  EXPECT_EQ(rel_diff(dist.arena->params().to_vector(), after), 0.0);
  // Momentum buffers are never averaged.
  if (K > 1) {
    EXPECT_FALSE(same_on_all_ranks(world, dist.sgd->momentum_buffer()));
  }
  EXPECT_THROW(strategy.plan(step_info(E, n, E * n - 1)), Error);
}

}  // namespace
}  // namespace dplab
