// DiLoCo (comm/algorithms/diloco.h) and SlowMo (comm/algorithms/slowmo.h; Streaming DiLoCo is in
// streaming_diloco_test.cpp) on 2 and 4 ranks against a serial simulation of the N workers
// (outer_step_harness.h): each worker's local steps on
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

#include "dplab/core/state_dict.h"
#include "dplab/core/usage_error.h"
#include "outer_step_harness.h"

namespace dplab {
namespace {

using namespace outer_step;

Options diloco_options(int64_t H, double lr, double momentum, bool nesterov) {
  Options o;
  o.set("diloco.H", std::to_string(H));
  o.set("diloco.outer_lr", std::to_string(lr));
  o.set("diloco.outer_momentum", std::to_string(momentum));
  o.set("diloco.outer_optim", nesterov ? "nesterov" : "sgd");
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

// H = 3 (and the epoch's end after 5 steps: rounds of 3 and 2), OuterOpt = Adam
// (diloco.outer_optim = adam, issue #33), against torch.optim.Adam's rule written out in double:
// at outer step t, m = β1 m + (1 − β1) Δ, v = β2 v + (1 − β2) Δ², θ −= η / (1 − β1^t) ·
// m / (√v / √(1 − β2^t) + ε), no weight decay. The defaults are PyTorch's (η 1e-3, β 0.9/0.999,
// ε 1e-8), checked on the options; the run uses η = 0.01, β2 = 0.99 and ε = 1e-5, so that the
// steps are large enough to tell apart from a plain average and an element whose Δ is at the
// level of f32 rounding (where m/√v is ±1 whatever Δ's size) moves by far less than η. The
// tolerance is relative to η: 2e-3 of it per element, besides the harness's 1e-5 relative
// (measured: 6.5e-6 = 6.5e-4 η at 2 ranks, 6.0e-6 at 4; f32 against double, where an element's
// Δ of the order of ε is divided by √v of the same order).
TEST(DiLoCo, OuterAdamMatchesSerialAdam) {
  {
    Options d;
    d.set("diloco.outer_optim", "adam");
    const DiLoCoOptions o = DiLoCoOptions::from_options(d);
    EXPECT_EQ(o.outer_optim, DiLoCoOuterOptim::adam);
    EXPECT_DOUBLE_EQ(o.outer_lr, 1e-3);
    EXPECT_DOUBLE_EQ(o.outer_beta1, 0.9);
    EXPECT_DOUBLE_EQ(o.outer_beta2, 0.999);
    EXPECT_DOUBLE_EQ(o.outer_eps, 1e-8);
    EXPECT_EQ(DiLoCoOptions::from_options(Options()).outer_optim, DiLoCoOuterOptim::nesterov);
  }
  Options o;
  o.set("diloco.H", "3");
  o.set("diloco.outer_optim", "adam");
  o.set("diloco.outer_lr", "0.01");
  o.set("diloco.outer_beta2", "0.99");
  o.set("diloco.outer_eps", "1e-5");
  o.set("comm.timeout_s", "20");
  DiLoCoStrategy s(topology_of(o), o);
  const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-5;
  std::vector<double> theta = Replica(11).params(), m, v;
  int64_t t = 0;
  double apart = 0;  // max |θ(t) − mean θ_i|
  auto outer = [&](const std::vector<Replica>& reps) {
    const size_t n = theta.size();
    const std::vector<double> avg = mean_params(reps);
    if (m.empty()) m.assign(n, 0.0), v.assign(n, 0.0);
    ++t;
    const double bc1 = 1 - std::pow(b1, double(t)), bc2 = 1 - std::pow(b2, double(t));
    for (size_t j = 0; j < n; ++j) {
      const double delta = theta[j] - avg[j];  // Δ = (1/k) Σ_i (θ − θ_i)
      m[j] = b1 * m[j] + (1 - b1) * delta;
      v[j] = b2 * v[j] + (1 - b2) * delta * delta;
      theta[j] -= lr / bc1 * m[j] / (std::sqrt(v[j]) / std::sqrt(bc2) + eps);
      apart = std::max(apart, std::fabs(theta[j] - avg[j]));
    }
    return theta;
  };
  const int64_t rounds = run_both(s, {2, 5, 3}, outer, "diloco H=3 outer adam");
  EXPECT_EQ(rounds, 4);
  EXPECT_EQ(s.outer_steps(), 4);
  double worst = 0;
  const std::vector<double> got = as_double(s.theta_global());
  for (size_t j = 0; j < theta.size(); ++j) worst = std::max(worst, std::fabs(got[j] - theta[j]));
  EXPECT_LT(worst, 2e-3 * lr);
  EXPECT_GT(apart, 0.5 * lr);  // not the plain average: Adam's steps moved θ away from it
  if (MpiEnv::get().world_rank() == 0)
    std::printf("[diloco outer adam] max |theta - serial| %.3g, max |theta - mean| %.3g\n", worst,
                apart);

  // The checkpoint holds Adam's moments (the serial m and v) and the outer step count t; a
  // strategy that loads them holds the same. (A resumed run continuing bitwise: diloco_outer_adam
  // in tests/tools/test_resume_mpi.cpp.)
  StateDict saved;
  s.save_state(saved);
  ASSERT_TRUE(saved.has("outer_exp_avg") && saved.has("outer_exp_avg_sq"));
  const std::vector<double> sm = as_double(saved.tensor("outer_exp_avg")),
                            sv = as_double(saved.tensor("outer_exp_avg_sq"));
  double mmax = 0, vmax = 0, dm = 0, dv = 0;
  for (size_t j = 0; j < m.size(); ++j) {
    mmax = std::max(mmax, std::fabs(m[j]));
    vmax = std::max(vmax, v[j]);
    dm = std::max(dm, std::fabs(sm[j] - m[j]));
    dv = std::max(dv, std::fabs(sv[j] - v[j]));
  }
  EXPECT_LT(dm, 1e-4 * mmax);
  EXPECT_LT(dv, 1e-3 * vmax);
  DiLoCoStrategy loaded(topology_of(o), o);
  Replica other(12);
  other.set_up(loaded);
  loaded.load_state(saved);
  EXPECT_EQ(loaded.outer_steps(), 4);
  EXPECT_EQ(as_double(loaded.theta_global()), got);
  Options nest;
  nest.set("diloco.H", "3");
  nest.set("comm.timeout_s", "20");
  DiLoCoStrategy wrong(topology_of(nest), nest);
  Replica third(13);
  third.set_up(wrong);
  EXPECT_THROW(wrong.load_state(saved), Error);  // Adam's moments into a Nesterov run
}

TEST(DiLoCo, RejectsBadOptions) {
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(0, 0.7, 0.9, true)), Error);
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(4, 0.7, 1.0, true)), Error);
  EXPECT_THROW(DiLoCoStrategy(topology_of(Options()), diloco_options(4, -1.0, 0.9, true)), Error);
  // An option of the other outer optimizer is refused, not ignored; the old key is named.
  Options adam_momentum;
  adam_momentum.set("diloco.outer_optim", "adam");
  adam_momentum.set("diloco.outer_momentum", "0.9");
  EXPECT_THROW(DiLoCoOptions::from_options(adam_momentum), UsageError);
  Options sgd_beta;
  sgd_beta.set("diloco.outer_beta1", "0.8");
  EXPECT_THROW(DiLoCoOptions::from_options(sgd_beta), UsageError);
  Options old_key;
  old_key.set("diloco.outer_nesterov", "false");
  EXPECT_THROW(DiLoCoOptions::from_options(old_key), UsageError);
  Options unknown;
  unknown.set("diloco.outer_optim", "lamb");
  EXPECT_THROW(DiLoCoOptions::from_options(unknown), UsageError);
}

Options slowmo_options(int64_t tau, double alpha, double beta) {
  Options o;
  o.set("slowmo.frequency", std::to_string(tau));
  o.set("slowmo.lr", std::to_string(alpha));
  o.set("slowmo.momentum", std::to_string(beta));
  o.set("comm.timeout_s", "20");
  return o;
}

// Lines 7-9 in double: x_avg = mean, u = β u + (x_start − x_avg) / γ, x = x_start − α γ u; the
// paper's Algorithm 1 with local SGD: every rank a worker, no average inside a round.
void check_slowmo(double alpha, double beta, bool spans = false) {
  Options o = slowmo_options(3, alpha, beta);
  o.set("slowmo.localsgd_frequency", "0");
  o.set("slowmo.node_workers", "false");
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

// fairscale's default algorithm (fairscale/experimental/nn/data_parallel/gossip/distributed.py):
// node workers and LocalSGD averages inside the round, on 2 nodes x 2 ranks (4 ranks,
// ranks_per_node 2; on 2 ranks: 2 nodes x 1 rank) against a serial computation of its update
// written here, with m = 2 workers (the nodes):
//   every step (backward hook, lines 814-838): each node's gradient is the mean of its ranks'
//     gradients; the worker's SGD (lr γ = 0.05, momentum 0.9) steps on it;
//   after step j (0-based) with (j + 1) % k == 0 (lines 477-478, 547-566): the workers'
//     parameters replaced by their mean (k = 3), except at a slow momentum step;
//   after step j with (j + 1) % τ == 0 (lines 474-475, 770-804): p = the workers' mean (the
//     memory-efficient gather, lines 717-751), then per element
//       gmb = β gmb + (old − p) / γ,   old = old − γ α gmb,   p = old      (lines 798-802)
//     with gmb = 0 and old = the initial parameters at the start (lines 655-715).
// τ = 6, α = 1, β = 0.5, rounds spanning epochs (fairscale counts steps globally), 2 epochs of
// 6 steps: averages after steps 3 and 9, slow steps after 6 and 12. Checked: every rank equals
// its node's serial worker (1e-5), a node's ranks hold the same bytes, the nodes differ inside a
// round, and the communication: one node gradient allreduce per step (2 ranks per node) and one
// parameter allreduce per average or slow step, on the cross communicator.
TEST(SlowMo, FairscaleDefaultAlgorithmMatchesTheSerialUpdate) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const int rpn = N % 2 == 0 && N >= 4 ? 2 : 1, W = N / rpn;
  const int64_t tau = 6, k = 3, epochs = 2, steps = 6;
  const double alpha = 1.0, beta = 0.5;
  Options o = slowmo_options(tau, alpha, beta);
  o.set("slowmo.localsgd_frequency", std::to_string(k));
  o.set("slowmo.round_spans_epochs", "true");
  o.set("ranks_per_node", std::to_string(rpn));
  SlowMoStrategy s(topology_of(o), o);
  EXPECT_EQ(s.workers(), W);
  Replica dist(11 + uint64_t(R));
  dist.set_up(s);
  s.take_stats();  // the setup broadcast

  std::vector<Replica> workers;
  for (int w = 0; w < W; ++w) workers.emplace_back(11);
  std::vector<double> old = workers[0].params(), gmb(old.size(), 0.0);
  const size_t n = old.size();
  auto mean_of_workers = [&] {
    std::vector<double> m(n, 0.0);
    for (const auto& w : workers) {
      const auto v = w.params();
      for (size_t j = 0; j < n; ++j) m[j] += v[j] / W;
    }
    return m;
  };
  int64_t apart_steps = 0, averages = 0, slow_steps = 0;
  int64_t j = 0;  // fairscale's num_updates
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t t = 0; t < steps; ++t, ++j) {
      StepInfo info{e, t, j, steps, epochs};
      s.plan(info);
      dist.grad(R, e, t);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
      for (int w = 0; w < W; ++w) {
        Replica& rep = workers[size_t(w)];
        std::vector<double> g(n, 0.0);
        for (int r = w * rpn; r < (w + 1) * rpn; ++r) {
          rep.grad(r, e, t);
          const auto gr = rep.arena->grads().to_vector();
          for (size_t i = 0; i < n; ++i) g[i] += double(gr[i]) / rpn;
        }
        std::vector<float> gf(g.begin(), g.end());
        Tensor grads = rep.arena->grads();
        grads.copy_(Tensor::from_vector(gf, {int64_t(n)}));
        rep.sgd->step();
      }
      if ((j + 1) % tau == 0) {
        const auto p = mean_of_workers();
        for (size_t i = 0; i < n; ++i) {
          gmb[i] = beta * gmb[i] + (old[i] - p[i]) / kLr;
          old[i] -= kLr * alpha * gmb[i];
        }
        for (auto& w : workers) w.set_params(old);
        ++slow_steps;
      } else if ((j + 1) % k == 0) {
        const auto p = mean_of_workers();
        for (auto& w : workers) w.set_params(p);
        ++averages;
      } else if (W > 1 && rel_diff(workers[0].params(), workers[1].params()) > 0) {
        ++apart_steps;
      }
      const double d = rel_diff(as_double(dist.arena->params()), workers[size_t(R / rpn)].params());
      EXPECT_LT(d, 1e-5) << "rank " << R << " after step " << j + 1;
    }
    s.end_epoch(e, 0.0);
    s.drain();
  }
  const CommStats st = s.take_stats();
  s.finish_training();  // no round in progress: 12 = 2 τ
  EXPECT_EQ(s.rounds(), 2);
  EXPECT_EQ(slow_steps, 2);
  EXPECT_EQ(averages, 2);
  if (W > 1) {
    EXPECT_GT(apart_steps, 0);  // the workers really step on their own between averages
  }
  // The ranks of a node hold the same bytes: gather everything, compare with the node's first.
  auto world = mpi_world();
  const Tensor mine = dist.arena->params();
  Tensor all = Tensor::zeros({mine.numel() * N});
  world->allgather(mine, all);
  const int first = R / rpn * rpn;
  EXPECT_EQ(std::memcmp(all.data<float>() + first * mine.numel(), mine.data<float>(),
                        size_t(mine.numel()) * 4),
            0);
  // Allreduces: the node gradient average every step (12) when a node has 2 ranks, and 4
  // parameter averages (2 LocalSGD, 2 slow steps); the cross communicator has W ranks, so they
  // count only with W > 1 (one node: the average is the node's own).
  const int64_t node_avgs = rpn > 1 ? 12 : 0;
  EXPECT_EQ(st.allreduces, node_avgs + 4);
  if (R == 0)
    std::printf(
        "[slowmo fairscale default] %d nodes x %d ranks: rel diff within 1e-5 at every "
        "step, %lld allreduces\n",
        W, rpn, static_cast<long long>(st.allreduces));
}

// A checkpoint from before issue #33 (no "localsgd_frequency", no "node_workers": it ran the
// paper's Algorithm 1, every rank a worker) loads into a run configured that way, and a run with
// the new defaults refuses it, naming the option to set.
TEST(SlowMo, OldCheckpointsLoadOrAreRefusedNamingTheOption) {
  const int R = MpiEnv::get().world_rank();
  Options old_cfg = slowmo_options(3, 1.0, 0.5);
  old_cfg.set("slowmo.localsgd_frequency", "0");
  old_cfg.set("slowmo.node_workers", "false");
  SlowMoStrategy a(topology_of(old_cfg), old_cfg);
  Replica rep(11 + uint64_t(R));
  rep.set_up(a);
  StateDict saved;
  a.save_state(saved);
  EXPECT_EQ(saved.get_int("localsgd_frequency"), 0);
  std::map<std::string, std::string> values = saved.values();
  ASSERT_EQ(values.erase("localsgd_frequency"), 1u);
  ASSERT_EQ(values.erase("node_workers"), 1u);
  StateDict old_format;
  old_format.assign(saved.tensors(), values);
  SlowMoStrategy b(topology_of(old_cfg), old_cfg);
  Replica rep_b(11 + uint64_t(R));
  rep_b.set_up(b);
  EXPECT_NO_THROW(b.load_state(old_format));
  Options now = slowmo_options(3, 1.0, 0.5);  // the defaults: k = 3
  now.set("slowmo.node_workers", "false");
  SlowMoStrategy c(topology_of(now), now);
  Replica rep_c(11 + uint64_t(R));
  rep_c.set_up(c);
  try {
    c.load_state(old_format);
    ADD_FAILURE() << "an old checkpoint was loaded into a run with localsgd_frequency 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slowmo.localsgd_frequency"), std::string::npos)
        << e.what();
  }
}

TEST(SlowMo, RejectsBadOptions) {
  EXPECT_THROW(SlowMoStrategy(topology_of(Options()), slowmo_options(0, 1.0, 0.5)), Error);
  EXPECT_THROW(SlowMoStrategy(topology_of(Options()), slowmo_options(3, 1.0, 1.0)), Error);
  Options o = slowmo_options(3, 1.0, 0.5);
  o.set("slowmo.localsgd_frequency", "-1");
  EXPECT_THROW(SlowMoStrategy(topology_of(o), o), Error);
  o.set("slowmo.localsgd_frequency", "3");
  o.set("slowmo.base", "sgp");
  o.set("slowmo.node_workers", "true");  // not implemented over SGP: refused, not ignored
  EXPECT_THROW(SlowMoStrategy(topology_of(o), o), Error);
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

}  // namespace
}  // namespace dplab
