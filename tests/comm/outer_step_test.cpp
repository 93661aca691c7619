// DiLoCo (comm/algorithms/diloco.h), SlowMo (comm/algorithms/slowmo.h) and Streaming DiLoCo
// (comm/algorithms/streaming_diloco.h: its fragment schedule by hand, then the strategy) on 2 and 4
// ranks against a serial simulation of the N workers written out here: each worker's local steps on
// its own batches, then the outer step computed in double from the N local models, exactly as
// the papers' Algorithm 1 states it (DiLoCo lines 11-15 with PyTorch's Nesterov SGD as OuterOpt;
// SlowMo lines 7-9). Rounds end after H (τ) local steps and at the end of every epoch, or, with
// <algorithm>.round_spans_epochs, after H (τ) local steps counted across epochs and at the end of
// training; then every epoch's consensus evaluation sees the average of the ranks' models.
//
// Tolerance: the strategies compute the outer step in f32 (the reference in double) and every
// rank's local steps are the serial replica's (same code, same batches), so the two differ by
// f32 rounding carried through a few dozen steps of a small CNN: 1e-5 relative (local_sgd's
// test's bound). Each reference checks that its outer step really differs from a plain average
// at that point, so a strategy that only averaged would fail.
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

namespace dplab {
namespace {

constexpr int kB = 4;

// The strategies take the topology the driver builds (issue #32).
std::shared_ptr<Topology> topology_of(const Options& o) {
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
std::vector<double> mean_params(const std::vector<Replica>& reps) {
  std::vector<double> sum(size_t(reps[0].arena->numel()), 0.0);
  for (const auto& r : reps) {
    const auto v = r.params();
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  }
  for (double& s : sum) s /= double(reps.size());
  return sum;
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

std::vector<double> as_double(const Tensor& t) {
  const auto v = t.to_vector();
  return {v.begin(), v.end()};
}

bool same_bytes_everywhere(const Tensor& params) {
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
int64_t run_both(Strategy& s, const Loop& loop, const OuterStep& outer, const char* what) {
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

Options diloco_options(int64_t H, double lr, double momentum, bool nesterov) {
  Options o;
  o.set("diloco.H", std::to_string(H));
  o.set("diloco.outer_lr", std::to_string(lr));
  o.set("diloco.outer_momentum", std::to_string(momentum));
  o.set("diloco.outer_nesterov", nesterov ? "true" : "false");
  o.set("comm.timeout_s", "20");
  return o;
}

// H = 1, outer lr 1, no outer momentum: θ(t) = θ(t−1) − (θ(t−1) − mean θ_i) = mean θ_i, i.e.
// parameter averaging after every step. The reference is that average, nothing else.
TEST(DiLoCo, H1OuterLr1NoMomentumIsParameterAveragingEveryStep) {
  const Options o = diloco_options(1, 1.0, 0.0, false);
  DiLoCoStrategy s(topology_of(o), o);
  const int64_t rounds = run_both(s, {2, 5, 1}, mean_params, "diloco H=1 averaging");
  EXPECT_EQ(s.outer_steps(), rounds);
  EXPECT_EQ(rounds, 10);
}

// H = 4 (and the epoch's end after 6 steps: rounds of 4 and 2), outer SGD with Nesterov
// momentum at the paper's lr 0.7 and μ 0.9, against lines 11-15 in double.
TEST(DiLoCo, OuterStepMatchesSerialNesterovForH4) {
  const Options o = diloco_options(4, 0.7, 0.9, true);
  DiLoCoStrategy s(topology_of(o), o);
  std::vector<double> theta, b;  // θ(t−1) and the outer momentum buffer
  double moved = 0, apart = 0;   // max |Δ| and max |θ(t) − mean θ_i| over all outer steps
  auto outer = [&](const std::vector<Replica>& reps) {
    const size_t n = size_t(reps[0].arena->numel());
    const std::vector<double> avg = mean_params(reps);
    std::vector<double> delta(n);
    for (size_t j = 0; j < n; ++j) delta[j] = theta[j] - avg[j];  // (1/k) Σ_i (θ − θ_i)
    const bool first = b.empty();
    if (first) b.assign(n, 0.0);
    for (size_t j = 0; j < n; ++j) {
      b[j] = first ? delta[j] : 0.9 * b[j] + delta[j];
      const double d = delta[j] + 0.9 * b[j];  // Nesterov
      theta[j] -= 0.7 * d;
      moved = std::max(moved, std::fabs(delta[j]));
      apart = std::max(apart, std::fabs(theta[j] - avg[j]));
    }
    return theta;
  };
  // θ(0) is rank 0's initial model: every serial replica starts from seed 11 as rank 0 does.
  theta = Replica(11).params();
  const int64_t rounds = run_both(s, {2, 6, 4}, outer, "diloco H=4 nesterov");
  EXPECT_EQ(rounds, 4);
  EXPECT_EQ(s.outer_steps(), 4);
  EXPECT_EQ(s.inner_steps(), 0);
  EXPECT_LT(rel_diff(as_double(s.theta_global()), theta), 1e-5);
  // The outer step is not the plain average (the test can tell the two apart).
  EXPECT_GT(apart, 0.1 * moved);
}

// diloco.round_spans_epochs: H = 4 over 2 epochs of 5 steps, lines 11-15 in double (outer SGD
// without momentum at lr 0.7: θ ← θ − 0.7 (θ − mean θ_i)). Outer steps after global steps 4, 8
// and the end of training (10): ceil(10 / 4) = 3, where per-epoch rounds make 4 (after steps 4
// and 5 of each epoch); the first epoch ends one step into a round.
TEST(DiLoCo, RoundSpanningEpochsTakesAnOuterStepEveryHStepsOfTheRun) {
  Options o = diloco_options(4, 0.7, 0.0, false);
  o.set("diloco.round_spans_epochs", "true");
  DiLoCoStrategy s(topology_of(o), o);
  std::vector<double> theta = Replica(11).params();
  auto outer = [&](const std::vector<Replica>& reps) {
    const std::vector<double> avg = mean_params(reps);
    for (size_t j = 0; j < theta.size(); ++j) theta[j] -= 0.7 * (theta[j] - avg[j]);
    return theta;
  };
  const int64_t rounds = run_both(s, {2, 5, 4, true}, outer, "diloco spanning epochs");
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(s.outer_steps(), 3);
  EXPECT_EQ(s.inner_steps(), 0);
  EXPECT_LT(rel_diff(as_double(s.theta_global()), theta), 1e-5);
}

TEST(DiLoCo, RejectsBadOptions) {
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(0, 0.7, 0.9, true)), Error);
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(4, 0.7, 1.0, true)), Error);
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(4, -1.0, 0.9, true)), Error);
}

Options slowmo_options(int64_t tau, double alpha, double beta) {
  Options o;
  o.set("slowmo.frequency", std::to_string(tau));
  o.set("slowmo.lr", std::to_string(alpha));
  o.set("slowmo.momentum", std::to_string(beta));
  o.set("comm.timeout_s", "20");
  return o;
}

// Lines 7-9 in double: x_avg = mean, u = β u + (x_start − x_avg) / γ, x = x_start − α γ u.
void check_slowmo(double alpha, double beta, bool spans = false) {
  Options o = slowmo_options(3, alpha, beta);
  if (spans) o.set("slowmo.round_spans_epochs", "true");
  SlowMoStrategy s(topology_of(o), o);
  std::vector<double> x_start = Replica(11).params(), u(x_start.size(), 0.0);
  double moved = 0, apart = 0;  // max |x_{t,0} − x_{t,τ}| and max |x_{t+1,0} − x_{t,τ}|
  auto outer = [&](const std::vector<Replica>& reps) {
    const std::vector<double> avg = mean_params(reps);
    for (size_t j = 0; j < x_start.size(); ++j) {
      moved = std::max(moved, std::fabs(x_start[j] - avg[j]));
      u[j] = beta * u[j] + (x_start[j] - avg[j]) / kLr;
      x_start[j] -= alpha * kLr * u[j];
      apart = std::max(apart, std::fabs(x_start[j] - avg[j]));
    }
    return x_start;
  };
  const std::string what =
      "slowmo alpha " + std::to_string(alpha) + " beta " + std::to_string(beta);
  // Per epoch: rounds of 3 and 2 steps (4 in all); spanning epochs: after global steps 3, 6, 9
  // and the end of training (10), ceil(10 / 3) = 4 rounds too, but over other steps.
  const int64_t rounds = run_both(s, {2, 5, 3, spans}, outer, what.c_str());
  EXPECT_EQ(rounds, 4);
  EXPECT_EQ(s.rounds(), 4);
  EXPECT_LT(rel_diff(as_double(s.x_start()), x_start), 1e-5);
  if (beta > 0) {
    // u holds differences of nearly equal f32 models divided by γ: cancellation costs a few
    // digits relative to u itself (the models above still agree to 1e-5).
    EXPECT_LT(rel_diff(as_double(s.slow_momentum()), u), 1e-4);
  }
  // The slow step is not the plain average (the test can tell the two apart).
  EXPECT_GT(apart, 0.1 * moved);
}

TEST(SlowMo, DefaultsMatchTheUpdateFormula) {
  check_slowmo(1.0, 0.5);  // fairscale's slowmo_lr and slowmo_momentum
}

TEST(SlowMo, SlowLrAndMomentumMatchTheUpdateFormula) {
  check_slowmo(0.8, 0.7);
}

TEST(SlowMo, RoundSpanningEpochsMatchesTheUpdateFormula) {
  check_slowmo(1.0, 0.5, true);
}

TEST(SlowMo, RejectsBadOptions) {
  EXPECT_THROW(SlowMoStrategy(topology_of(Options()), slowmo_options(0, 1.0, 0.5)), Error);
  EXPECT_THROW(SlowMoStrategy(topology_of(Options()), slowmo_options(3, 1.0, 1.0)), Error);
}

// ---- SlowMo with SGP as the base algorithm --------------------------------------------------

// slowmo.base = sgp, τ = 3, α = 0.8, β = 0.6, on a small arena with hand-made gradients, from
// unequal push-sum weights (so x = w·z, the steps applied to x and the de-biasing all matter),
// against a serial push-sum over all ranks in double: every base step x_r −= γ g_r, then either
// the gossip of round k (global step k) with uniform mixing 1/2 of (x, w) from rank r − o_k,
// o_k the k-th entry of the phone book written out by rule here (for h = 1, 2, 4, … < n: +h,
// then −h), or at a round's end (after 3 and 6 steps, and the epoch's end at 8) lines 7-9:
// x̄ = Σ_r x_r / Σ_r w_r, u = β u + (x_start − x̄) / γ, x_start −= α γ u, every x_r = x_start and
// w_r = 1. z = x_me / w_me is compared after every step, and after every round end all ranks
// must hold the same bytes, equal to x_start, with push-sum weight 1. The first x̄ must differ
// from the plain mean of the z_r (the push-sum average is not the plain one): with I = 1 on more
// than 2 ranks (2 ranks mix completely in one gossip, equalising w), with I = 4 on any count (no
// gossip before the first round end). sgp.interval = I: the gossip of round j closes step
// (j + 1) I − 1 unless a round ends there; the other steps are local, applied to x.
void check_slowmo_sgp(int64_t I) {
  const int n = MpiEnv::get().world_size(), me = MpiEnv::get().world_rank();
  const double gamma = 0.25, alpha = 0.8, beta = 0.6;
  const int64_t tau = 3, steps = 8;
  Options opt = slowmo_options(tau, alpha, beta);
  opt.set("slowmo.base", "sgp");
  opt.set("sgp.interval", std::to_string(I));
  std::vector<NamedTensor> nt = {{"a.weight", Tensor::zeros({30})}, {"b.bias", Tensor::zeros({7})}};
  ParamArena arena(nt);
  SGDOptions so;
  so.lr = gamma;
  SGD sgd(arena, so);
  const int64_t m = arena.numel();
  auto value = [](int64_t i) { return float((i * 11) % 64) / 8.0f; };
  {
    float* z = arena.params().data<float>();
    for (int64_t i = 0; i < m; ++i) z[i] = value(i);
  }
  SlowMoStrategy s(topology_of(opt), opt);
  ASSERT_NE(s.sgp(), nullptr);
  TrainContext ctx;
  ctx.arena = &arena;
  ctx.optimizer = &sgd;
  ctx.options = &opt;
  s.setup(ctx);
  auto start_weight = [&](int r) {  // unequal, summing to n, exact in f32
    return 1.0f + 0.25f * (float(r) - float(n - 1) / 2.0f) / float(n);
  };
  s.sgp()->set_push_sum_weight(start_weight(me));
  std::vector<char> in_tensor(size_t(m), 0);  // the optimizer leaves the arena's padding alone
  for (auto& seg : arena.segments())
    for (int64_t i = seg.offset; i < seg.offset + seg.numel; ++i) in_tensor[size_t(i)] = 1;
  auto grad = [&](int r, int64_t k, int64_t i) {
    return in_tensor[size_t(i)] ? float((r * 5 + 2 * i + 3 * k) % 7) - 3.0f : 0.0f;
  };
  std::vector<int> book;
  for (int h = 1; h < n; h *= 2) {
    book.push_back(h % n);
    book.push_back((n - h % n) % n);
  }
  // Serial reference.
  std::vector<std::vector<double>> x(static_cast<size_t>(n),
                                     std::vector<double>(static_cast<size_t>(m)));
  std::vector<double> w(static_cast<size_t>(n)), xs(static_cast<size_t>(m)),
      u(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < m; ++i) xs[size_t(i)] = value(i);
  for (int r = 0; r < n; ++r) {
    w[size_t(r)] = start_weight(r);
    for (int64_t i = 0; i < m; ++i) x[size_t(r)][size_t(i)] = w[size_t(r)] * value(i);
  }
  double debias = -1;  // max |x̄ − mean z| at the first round end
  int64_t since = 0, rounds = 0;
  for (int64_t k = 0; k < steps; ++k) {
    StepInfo st{0, k, k, steps, 1};
    sgd.zero_grad();
    float* g = arena.grads().data<float>();
    for (int64_t i = 0; i < m; ++i) g[i] = grad(me, k, i);
    s.after_backward(st);
    sgd.step();
    s.after_step(st);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < m; ++i) x[size_t(r)][size_t(i)] -= gamma * grad(r, k, i);
    const bool round_end = ++since == tau || k + 1 == steps;
    if (round_end) {
      double wsum = 0;
      for (int r = 0; r < n; ++r) wsum += w[size_t(r)];
      for (int64_t i = 0; i < m; ++i) {
        double xsum = 0, zmean = 0;
        for (int r = 0; r < n; ++r) {
          xsum += x[size_t(r)][size_t(i)];
          zmean += x[size_t(r)][size_t(i)] / w[size_t(r)] / n;
        }
        const double xbar = xsum / wsum;
        if (rounds == 0) debias = std::max(debias, std::fabs(xbar - zmean));
        u[size_t(i)] = beta * u[size_t(i)] + (xs[size_t(i)] - xbar) / gamma;
        xs[size_t(i)] -= alpha * gamma * u[size_t(i)];
      }
      for (int r = 0; r < n; ++r) {
        x[size_t(r)] = xs;
        w[size_t(r)] = 1.0;
      }
      since = 0;
      ++rounds;
    } else if (n > 1 && (k + 1) % I == 0) {
      const int off = book[size_t((k + 1) / I - 1) % book.size()];
      auto x2 = x;
      auto w2 = w;
      for (int r = 0; r < n; ++r) {
        const size_t src = size_t((r - off + n) % n);
        w2[size_t(r)] = (w[size_t(r)] + w[src]) / 2;
        for (int64_t i = 0; i < m; ++i)
          x2[size_t(r)][size_t(i)] = (x[size_t(r)][size_t(i)] + x[src][size_t(i)]) / 2;
      }
      x = x2;
      w = w2;
    }
    const float* z = arena.params().data<float>();
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      worst = std::max(worst, std::fabs(z[i] - x[size_t(me)][size_t(i)] / w[size_t(me)]));
    EXPECT_LT(worst, 1e-5) << "step " << k << " rank " << me;
    EXPECT_NEAR(s.sgp()->push_sum_weight(), w[size_t(me)], 1e-7) << "step " << k;
    if (round_end) {
      EXPECT_TRUE(same_bytes_everywhere(arena.params())) << "step " << k;
      EXPECT_LT(rel_diff(as_double(s.x_start()), xs), 1e-6) << "step " << k;
      EXPECT_EQ(s.sgp()->push_sum_weight(), 1.0f);
    }
  }
  s.finish_training();  // the epoch's end closed the last round: nothing left to do
  EXPECT_EQ(s.rounds(), 3);
  EXPECT_LT(rel_diff(as_double(s.slow_momentum()), u), 1e-5);
  if (n > 2 || (n == 2 && I > tau)) {
    EXPECT_GT(debias, 1e-3);
  }
  const CommStats st = s.take_stats();
  if (n > 1) {
    EXPECT_EQ(st.allreduces, 3);  // the push-sum averages (the gossips are point-to-point)
  }
  if (me == 0)
    std::printf("[slowmo sgp, interval %lld] %d ranks: first-round |push-sum - plain mean| %.3g\n",
                (long long)I, n, debias);
}

TEST(SlowMo, SgpBaseMatchesSerialPushSumAndTheUpdateFormula) {
  check_slowmo_sgp(1);
}

TEST(SlowMo, SgpBaseWithGossipIntervalMatchesSerialPushSum) {
  check_slowmo_sgp(4);
}

TEST(SlowMo, RejectsAnUnknownBase) {
  Options o = slowmo_options(3, 1.0, 0.5);
  o.set("slowmo.base", "gossip");
  EXPECT_THROW((SlowMoStrategy{topology_of(o), o}), Error);
}

// ---- Streaming DiLoCo -------------------------------------------------------------------------

// The staggered schedule by hand: H = 8, P = 2 (offsets 4 and 8), τ = 2; and H = 10, P = 3
// (offsets 3, 6, 10).
TEST(StreamingDiLoCo, FragmentScheduleIsStaggered) {
  StreamingSchedule sc{8, 2, 2};
  sc.check();
  std::vector<int64_t> sends, applies;
  for (int64_t s = 0; s <= 20; ++s) {
    sends.push_back(sc.sends_after(s));
    applies.push_back(sc.applies_after(s));
  }
  //                               s: 0   1   2   3  4   5   6   7  8   9  10  11 12  13 14  15 16
  //                               17 18  19 20
  EXPECT_EQ(sends, (std::vector<int64_t>{-1, -1, -1, -1, 0,  -1, -1, -1, 1,  -1, -1,
                                         -1, 0,  -1, -1, -1, 1,  -1, -1, -1, 0}));
  EXPECT_EQ(applies, (std::vector<int64_t>{-1, -1, -1, -1, -1, -1, 0,  -1, -1, -1, 1,
                                           -1, -1, -1, 0,  -1, -1, -1, 1,  -1, -1}));
  StreamingSchedule three{10, 3, 0};
  three.check();
  std::vector<int64_t> got;
  for (int64_t s = 1; s <= 13; ++s) got.push_back(three.sends_after(s));
  EXPECT_EQ(got, (std::vector<int64_t>{-1, -1, 0, -1, -1, 1, -1, -1, -1, 2, -1, -1, 0}));
  // τ must stay below ⌊H/P⌋, P within 1 .. H.
  EXPECT_THROW((StreamingSchedule{8, 2, 4}.check()), Error);
  EXPECT_THROW((StreamingSchedule{8, 9, 0}.check()), Error);
  EXPECT_NO_THROW((StreamingSchedule{8, 2, 3}.check()));
}

// Fragments cover the arena, in order, cut at tensor boundaries, about equal in size.
TEST(StreamingDiLoCo, FragmentsAreContiguousTensorRanges) {
  Replica r(1);
  const auto& segs = r.arena->segments();
  std::set<int64_t> bounds = {r.arena->numel()};
  for (const auto& sg : segs) bounds.insert(sg.offset);
  for (int64_t P : {int64_t(1), int64_t(2), int64_t(3)}) {
    const auto f = arena_fragments(*r.arena, P);
    ASSERT_EQ(int64_t(f.size()), P);
    EXPECT_EQ(f.front().first, 0);
    EXPECT_EQ(f.back().second, r.arena->numel());
    for (size_t i = 0; i < f.size(); ++i) {
      EXPECT_LT(f[i].first, f[i].second) << P;
      EXPECT_TRUE(bounds.count(f[i].second)) << P;
      if (i > 0) {
        EXPECT_EQ(f[i].first, f[i - 1].second) << P;
      }
    }
  }
  EXPECT_THROW(arena_fragments(*r.arena, int64_t(segs.size()) + 1), Error);
}

// The strategy at H = 4, P = 2, τ = 1, α = 0.5 against the schedule written by hand (fragment
// 0 sends after steps 2, 6, 10, fragment 1 after 4, 8, 12, each applied one step later) and the
// outer step and mixing in double: Δ_p = θ_g[p] − mean θ_i[p] at the send; at the apply
// θ_g[p] ← Nesterov SGD(θ_g[p], Δ_p), θ_i[p] ← θ_g[p] + α (θ_i[p] − θ_g[p]) per replica. At the
// end the pending fragment is applied, then every fragment takes one blocking outer step with
// α = 0.
TEST(StreamingDiLoCo, OuterStepsAndMixingMatchTheSerialReference) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const double lr = 0.7, mu = 0.9, alpha = 0.5;
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.fragments", "2");
  o.set("streaming_diloco.fragment_sync_delay", "1");
  o.set("streaming_diloco.fragment_update_alpha", "0.5");
  o.set("comm.timeout_s", "20");
  StreamingDiLoCoStrategy s(topology_of(o), o);
  Replica dist(11 + uint64_t(R));
  dist.set_up(s);
  const auto frags = s.fragments();
  ASSERT_EQ(frags.size(), 2u);

  std::vector<Replica> reps;
  for (int i = 0; i < N; ++i) reps.emplace_back(11);
  std::vector<double> theta = reps[0].params(), b(theta.size(), 0.0);
  std::vector<int64_t> outer(2, 0);
  std::vector<std::vector<double>> delta(2);
  auto send = [&](int p) {
    const auto avg = mean_params(reps);
    delta[size_t(p)].clear();
    for (int64_t j = frags[size_t(p)].first; j < frags[size_t(p)].second; ++j)
      delta[size_t(p)].push_back(theta[size_t(j)] - avg[size_t(j)]);
  };
  double mixed_apart = 0;  // how far mixing leaves the local models from θ_g (α > 0 matters)
  auto apply = [&](int p, double a) {
    const int64_t lo = frags[size_t(p)].first, hi = frags[size_t(p)].second;
    for (int64_t j = lo; j < hi; ++j) {
      const double d = delta[size_t(p)][size_t(j - lo)];
      b[size_t(j)] = outer[size_t(p)] == 0 ? d : mu * b[size_t(j)] + d;
      theta[size_t(j)] -= lr * (d + mu * b[size_t(j)]);
    }
    ++outer[size_t(p)];
    for (auto& r : reps) {
      std::vector<double> v = r.params();
      for (int64_t j = lo; j < hi; ++j) {
        const double t = theta[size_t(j)];
        v[size_t(j)] = t + a * (v[size_t(j)] - t);
        mixed_apart = std::max(mixed_apart, std::fabs(v[size_t(j)] - t));
      }
      r.set_params(v);
    }
  };
  const int64_t epochs = 2, steps = 6;
  int64_t global = 0, pending = -1;
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t k = 0; k < steps; ++k, ++global) {
      StepInfo info{e, k, global, steps, epochs};
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
      for (int i = 0; i < N; ++i) reps[size_t(i)].grad(i, e, k);
      for (auto& r : reps) r.sgd->step();
      const int64_t done = global + 1;
      if (pending >= 0 && done % 2 == 1) {  // one step after the send
        apply(int(pending), alpha);
        pending = -1;
      }
      if (done % 4 == 2) pending = 0;
      if (done % 4 == 0) pending = 1;
      if (done % 2 == 0) send(int(pending));
    }
    s.end_epoch(e, 0.0);
    s.drain();
  }
  s.finish_training();
  ASSERT_EQ(pending, 1);  // sent after step 12, applied by finish_training
  apply(1, alpha);
  for (int p = 0; p < 2; ++p) {
    send(p);
    apply(p, 0.0);
  }
  EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{4, 4}));
  const double d = rel_diff(as_double(dist.arena->params()), reps[size_t(R)].params());
  EXPECT_LT(d, 1e-5) << "rank " << R;
  EXPECT_LT(rel_diff(as_double(s.theta_global()), theta), 1e-5);
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
  if (N > 1) {
    EXPECT_GT(mixed_apart, 0.0);  // α = 0.5 left local progress in the models
  }
  if (R == 0) std::printf("[streaming_diloco] %d ranks: rel diff %.3g\n", N, d);
}

// streaming_diloco.round_spans_epochs = false: every epoch's end makes a full sync (the exchange
// in flight applied, then every fragment's blocking outer step with α = 0), so every epoch ends
// with θ_g, the same bytes on every rank, and the schedule starts again. H = 4, P = 2, τ = 1,
// epochs of 6 steps: fragment 0 sends after steps 2 and 6 of each epoch, fragment 1 after step
// 4; per epoch fragment 0 takes 3 outer steps (the apply after step 3, the one sent at 6 applied
// by the full sync, the full sync's own) and fragment 1 two (after step 5, the full sync's).
// Spanning epochs (the default) leaves the local models apart at the epoch's end instead.
TEST(StreamingDiLoCo, FullSyncAtEveryEpochEndUnlessRoundsSpanEpochs) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  for (const bool spans : {false, true}) {
    Options o;
    o.set("streaming_diloco.H", "4");
    o.set("streaming_diloco.fragments", "2");
    o.set("streaming_diloco.fragment_sync_delay", "1");
    o.set("streaming_diloco.round_spans_epochs", spans ? "true" : "false");
    o.set("comm.timeout_s", "20");
    StreamingDiLoCoStrategy s(topology_of(o), o);
    Replica dist(11 + uint64_t(R));
    dist.set_up(s);
    const int64_t epochs = 2, steps = 6;
    int64_t global = 0;
    for (int64_t e = 0; e < epochs; ++e) {
      s.begin_epoch(e);
      for (int64_t k = 0; k < steps; ++k, ++global) {
        StepInfo info{e, k, global, steps, epochs};
        s.plan(info);
        dist.grad(R, e, k);
        s.after_backward(info);
        dist.sgd->step();
        s.after_step(info);
      }
      s.end_epoch(e, 0.0);
      s.drain();
      EXPECT_FALSE(s.consensus_eval([] {}));  // not offered (as before issue #32)
      if (!spans) {
        EXPECT_EQ(s.inner_steps(), 0);  // the schedule starts again
        EXPECT_EQ(s.rounds(), e + 1);
        EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{3 * (e + 1), 2 * (e + 1)}));
        EXPECT_TRUE(same_bytes_everywhere(dist.arena->params())) << "epoch " << e;
        EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global())) << "epoch " << e;
      } else {
        EXPECT_EQ(s.inner_steps(), global);
        EXPECT_EQ(s.rounds(), 0);
        if (N > 1) {
          EXPECT_FALSE(same_bytes_everywhere(dist.arena->params())) << "epoch " << e;
        }
      }
    }
    s.finish_training();
    // Not spanning: the last epoch's end closed the round; spanning: the end of training's full
    // sync (fragment 0 sent at 10 and applied at 11; fragment 1 in flight since 12).
    EXPECT_EQ(s.rounds(), spans ? 1 : 2);
    EXPECT_EQ(s.outer_steps(), spans ? (std::vector<int64_t>{4, 4}) : (std::vector<int64_t>{6, 4}));
    EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
    EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global()));
  }
}

// The wire: bf16 outer gradients cost half the bytes of f32 and are rounded: θ_g moves off the
// f32 run's (so the wire is really used) by at most the bf16 rounding of Δ, 2^-9 of |Δ|, and
// |Δ| (a few local steps) is well below |θ|: under 1e-2 of θ's norm.
TEST(StreamingDiLoCo, Bf16WireHalvesTheBytesAndRoundsTheOuterGradient) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto run = [&](const char* wire, CommStats& stats) {
    Options o;
    o.set("streaming_diloco.H", "2");
    o.set("streaming_diloco.fragments", "2");
    o.set("streaming_diloco.fragment_sync_delay", "0");
    o.set("streaming_diloco.wire", wire);
    o.set("comm.timeout_s", "20");
    StreamingDiLoCoStrategy s(topology_of(o), o);
    Replica dist(11 + uint64_t(R));
    dist.set_up(s);
    s.take_stats();  // the setup broadcast
    for (int64_t k = 0; k < 4; ++k) {
      StepInfo info{0, k, k, 4, 1};
      dist.grad(R, 0, k);
      dist.sgd->step();
      s.after_step(info);
    }
    stats = s.take_stats();
    return as_double(s.theta_global());
  };
  CommStats f32, bf16;
  const auto a = run("f32", f32), b = run("bf16", bf16);
  if (N == 1) return;
  EXPECT_EQ(f32.allreduces, 4);  // one fragment after each step
  EXPECT_EQ(bf16.bytes_sent * 2, f32.bytes_sent);
  const double d = rel_diff(b, a);
  EXPECT_GT(d, 0.0);
  EXPECT_LT(d, 1e-2);
  if (R == 0) std::printf("[streaming_diloco bf16] theta rel diff to f32 %.3g\n", d);
}

// ---- Streaming DiLoCo, quantised outer gradients --------------------------------------------

// comm/quantize.h's round trip as its header specifies it, written out here: per block of
// `block` values, s = max |x| / q (f32), x̂ = clamp(round(x / s), −q, q) · s (f32).
std::vector<float> quantize_dequantize(const std::vector<float>& x, int q, int64_t block) {
  std::vector<float> out(x.size(), 0.f);
  for (size_t lo = 0; lo < x.size(); lo += size_t(block)) {
    const size_t hi = std::min(x.size(), lo + size_t(block));
    float m = 0;
    for (size_t j = lo; j < hi; ++j) m = std::max(m, std::fabs(x[j]));
    const float s = m / float(q);
    for (size_t j = lo; j < hi; ++j) {
      const float c = s > 0 ? std::clamp(std::round(x[j] / s), -float(q), float(q)) : 0.f;
      out[j] = c * s;
    }
  }
  return out;
}

// quantize = int4 / int8 at H = 4, P = 2, τ = 1, α = 0.5, outer SGD with lr 1 and no momentum
// (θ_g[p] ← θ_g[p] − Δ_p, so θ_g shows Δ directly). Before every inner step's after_step the
// test gathers every rank's local model; at each send (steps 2, 6, 10: fragment 0; 4, 8, 12:
// fragment 1) it computes δ_r = θ_g[p] − θ_r[p] per rank, quantises and dequantises each δ_r
// itself, sums them in f32 in rank order and divides by W; one step later θ_g[p] must equal its
// own θ_g[p] − Δ_p. The inputs are bitwise the strategy's, so the codes are the same and only
// the f32 sum's order could differ: the tolerance is 1e-6 of the quantisation step. The test
// also checks that Δ differs from the exact mean (by more than 100x that tolerance: the values
// really went through the quantiser) and by at most the mean of the ranks' half steps, and
// the bytes: per send, this rank's codes and scales, by one allgather (no allreduce).
void check_quantized(const char* quantize, int q) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const int64_t block = 64;
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.fragments", "2");
  o.set("streaming_diloco.fragment_sync_delay", "1");
  o.set("streaming_diloco.fragment_update_alpha", "0.5");
  o.set("streaming_diloco.outer_lr", "1");
  o.set("streaming_diloco.outer_momentum", "0");
  o.set("streaming_diloco.quantize", quantize);
  o.set("streaming_diloco.quantize_block", std::to_string(block));
  o.set("comm.timeout_s", "20");
  StreamingDiLoCoStrategy s(topology_of(o), o);
  Replica dist(11 + uint64_t(R));
  dist.set_up(s);
  s.take_stats();  // the setup broadcast
  const auto frags = s.fragments();
  ASSERT_EQ(frags.size(), 2u);
  const int64_t n = dist.arena->numel();
  std::vector<float> theta = dist.arena->params().to_vector();  // θ_g(0): rank 0's model
  auto world = mpi_world();
  std::vector<std::vector<float>> delta(2);
  double quant_apart = 0, exact_tol = 0;  // max |Δ − exact mean| and the tolerance below
  int64_t compared = 0;
  auto send = [&](int p, const std::vector<float>& all) {
    const int64_t lo = frags[size_t(p)].first, hi = frags[size_t(p)].second;
    std::vector<float> acc(size_t(hi - lo), 0.f);
    std::vector<double> exact(acc.size(), 0.0), half_steps(acc.size(), 0.0);
    for (int r = 0; r < N; ++r) {
      std::vector<float> d(acc.size());
      for (int64_t j = lo; j < hi; ++j)
        d[size_t(j - lo)] = theta[size_t(j)] - all[size_t(int64_t(r) * n + j)];
      const auto dq = quantize_dequantize(d, q, block);
      for (size_t j = 0; j < d.size(); ++j) {
        acc[j] += dq[j];
        exact[j] += d[j];
      }
      for (size_t b = 0; b < d.size(); b += size_t(block)) {
        float m = 0;
        for (size_t j = b; j < std::min(d.size(), b + size_t(block)); ++j)
          m = std::max(m, std::fabs(d[j]));
        for (size_t j = b; j < std::min(d.size(), b + size_t(block)); ++j)
          half_steps[j] += m / q / 2 + std::ldexp(double(m), -22);
      }
    }
    for (size_t j = 0; j < acc.size(); ++j) {
      acc[j] /= float(N);
      const double err = std::fabs(double(acc[j]) - exact[j] / N);
      EXPECT_LE(err, half_steps[j] / N + 1e-12) << "element " << j;
      quant_apart = std::max(quant_apart, err);
    }
    delta[size_t(p)] = acc;
  };
  auto apply_and_compare = [&](int p) {
    const int64_t lo = frags[size_t(p)].first, hi = frags[size_t(p)].second;
    for (int64_t j = lo; j < hi; ++j) theta[size_t(j)] -= delta[size_t(p)][size_t(j - lo)];
    const auto got = s.theta_global().to_vector();
    double worst = 0, scale = 0;
    for (int64_t j = lo; j < hi; ++j) {
      worst = std::max(worst, double(std::fabs(got[size_t(j)] - theta[size_t(j)])));
      scale = std::max(scale, double(std::fabs(delta[size_t(p)][size_t(j - lo)])));
    }
    exact_tol = 1e-6 * scale / q;
    EXPECT_LE(worst, exact_tol) << "fragment " << p;
    ++compared;
  };
  const int64_t epochs = 2, steps = 6;
  int64_t global = 0, pending = -1;
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t k = 0; k < steps; ++k, ++global) {
      StepInfo info{e, k, global, steps, epochs};
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      Tensor all = Tensor::zeros({n * N});
      world->allgather(dist.arena->params(), all);
      const std::vector<float> locals = all.to_vector();
      s.after_step(info);
      const int64_t done = global + 1;
      if (pending >= 0 && done % 2 == 1) {
        apply_and_compare(int(pending));
        pending = -1;
      }
      if (done % 4 == 2) pending = 0;
      if (done % 4 == 0) pending = 1;
      if (done % 2 == 0) send(int(pending), locals);
    }
    s.end_epoch(e, 0.0);
    s.drain();
  }
  const CommStats st = s.take_stats();
  EXPECT_EQ(compared, 5);
  s.finish_training();
  EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{4, 4}));
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
  EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global()));
  if (N == 1) return;  // one rank: nothing exchanged, nothing quantised
  EXPECT_GT(quant_apart, 100 * exact_tol);
  // Three sends per fragment, each 4 bytes per block of 64 and q = 7: half a byte per value,
  // q = 127: one byte.
  double bytes = 0;
  for (const auto& f : frags) {
    const int64_t len = f.second - f.first;
    bytes += 3.0 * (4 * ((len + block - 1) / block) + (q == 7 ? (len + 1) / 2 : len));
  }
  EXPECT_EQ(st.bytes_sent, bytes);
  EXPECT_EQ(st.collectives, 6);
  EXPECT_EQ(st.allreduces, 0);
  if (R == 0)
    std::printf("[streaming_diloco %s] %d ranks: max |quantised - exact mean| %.3g\n", quantize, N,
                quant_apart);
}

TEST(StreamingDiLoCo, Int4OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized("int4", 7);
}

TEST(StreamingDiLoCo, Int8OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized("int8", 127);
}

TEST(StreamingDiLoCo, QuantizeRejectsBadOptions) {
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.quantize", "int2");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
  o.set("streaming_diloco.quantize", "int8");
  o.set("streaming_diloco.wire", "bf16");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
  o.set("streaming_diloco.wire", "f32");
  o.set("streaming_diloco.quantize_block", "0");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
}

}  // namespace
}  // namespace dplab
