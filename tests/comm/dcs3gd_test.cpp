// DC-S3GD (ALGORITHMS.md §4) against serial computations of the same thing:
//   * the schedule shape by hand;
//   * same data on every rank: D = 0 and the trajectory is serial MXNet-form momentum SGD;
//   * one rank: the same trajectory as dplab's (PyTorch-form) momentum SGD at constant lr;
//   * different data: every rank matches an N-replica serial simulation of Algorithm 1;
//   * W̄ bitwise equal on all ranks after every step (allgather, compare bytes);
//   * after a corrected step ‖λ·g⊙g⊙D‖ = λ0·‖g‖ per tensor (and globally with norm=global),
//     with g̃ recovered from the update itself;
//   * a drain leaves nothing in flight, W = W̄ = the average of the ranks' W;
//   * with a slow emulated link the allreduce overlaps the compute.
// mnist_cnn has no BatchNorm, so W̄ and the serial references cover every parameter.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"

#include <cmath>
#include <cstring>

#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/cluster/virtual_time_source.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

constexpr int kB = 4;  // per-rank batch
constexpr uint64_t kSeed = 4321;

using test::global_batch;

// Rank r's slice of step `step`'s batch (ranks = number of slices).
void rank_batch(int step, int r, int ranks, Tensor& x, Tensor& y) {
  Tensor gx, gy;
  global_batch(step, ranks * kB, gx, gy);
  x = gx.slice(0, r * kB, (r + 1) * kB).contiguous();
  y = gy.slice(0, r * kB, (r + 1) * kB).contiguous();
}

struct Replica : test::MnistReplica {
  Replica(uint64_t seed, double lr, double momentum, double wd)
      : MnistReplica(seed, lr, momentum, wd) {}
  void forward_backward(const Tensor& x, const Tensor& y) {
    arena->zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    backward(loss);
  }
  TrainContext context(const Options* opt) {
    TrainContext ctx;
    ctx.model = model.get();
    ctx.arena = arena.get();
    ctx.optimizer = sgd.get();
    ctx.options = opt;
    return ctx;
  }
};

StepInfo step_info(int t, int64_t spe, int64_t epochs) {
  StepInfo s;
  s.global_step = t;
  s.epoch = spe > 0 ? t / spe : 0;
  s.step_in_epoch = spe > 0 ? t % spe : t;
  s.steps_per_epoch = spe;
  s.total_epochs = epochs;
  return s;
}

// One training-loop iteration at the strategy's call points.
void loop_step(Dcs3gdStrategy& st, Replica& rep, const StepInfo& info, const Tensor& x,
               const Tensor& y) {
  const StepPlan plan = st.plan(info);
  ASSERT_FALSE(plan.optimizer_step) << "DC-S3GD owns the update";
  ASSERT_TRUE(plan.zero_grad);
  rep.arena->zero_grad();
  st.before_forward(info);
  Tensor loss = cross_entropy(rep.model->forward(x), y);
  backward(loss);
  st.after_backward(info);
  st.after_step(info);
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// True when every rank of `comm` holds the same bytes in `t`.
bool bitwise_equal_on_all_ranks(Communicator& comm, const Tensor& t) {
  Tensor all = Tensor::empty({comm.size() * t.numel()});
  comm.allgather(t.contiguous(), all);
  const char* p = static_cast<const char*>(all.raw_data());
  for (int r = 1; r < comm.size(); ++r)
    if (std::memcmp(p, p + size_t(r) * t.nbytes(), t.nbytes()) != 0) return false;
  return true;
}

Options base_options() {
  Options o;
  o.set("algo", "dcs3gd");
  return o;
}

TEST(Dcs3gdSchedule, LinearWarmupThenLinearDecayToZero) {
  // T = 10, T_w = 4: 1/4, 2/4, 3/4, 1 then (10 - t)/6.
  const double want[] = {0.25, 0.5, 0.75, 1.0, 1.0, 5. / 6, 4. / 6, 3. / 6, 2. / 6, 1. / 6, 0.0};
  for (int t = 0; t <= 10; ++t) EXPECT_DOUBLE_EQ(dcs3gd_schedule_factor(t, 10, 4), want[t]) << t;
  EXPECT_DOUBLE_EQ(dcs3gd_schedule_factor(12, 10, 4), 0.0);
  EXPECT_DOUBLE_EQ(dcs3gd_schedule_factor(3, 10, 0), 7. / 10);  // no warm-up
  EXPECT_DOUBLE_EQ(dcs3gd_schedule_factor(3, 0, 0), 1.0);       // unknown length: constant
}

TEST(Dcs3gdOptions, ParsesAndRejects) {
  Options o = base_options();
  o.set("dcs3gd.norm", "global");
  o.set("dcs3gd.lambda0", "0.5");
  o.set("dcs3gd.wd_exclude", "bn_bias");
  const Dcs3gdOptions d = Dcs3gdOptions::from_options(o);
  EXPECT_EQ(d.norm, Dcs3gdOptions::Norm::global);
  EXPECT_DOUBLE_EQ(d.lambda0, 0.5);
  EXPECT_EQ(d.wd_exclude, Dcs3gdOptions::WdExclude::bn_bias);
  EXPECT_EQ(d.schedule, Dcs3gdOptions::Schedule::warmup_linear);
  Options other = base_options();
  other.set("dcs3gd.schedule", "loop");
  other.set("dcs3gd.wd_exclude", "none");
  other.set("dcs3gd.correct_from", "warmup_end");
  const Dcs3gdOptions e = Dcs3gdOptions::from_options(other);
  EXPECT_EQ(e.schedule, Dcs3gdOptions::Schedule::loop);
  EXPECT_EQ(e.wd_exclude, Dcs3gdOptions::WdExclude::none);
  EXPECT_TRUE(e.correct_after_warmup);
  // Built in code: the declared defaults.
  const Dcs3gdOptions built;
  EXPECT_EQ(built.norm, Dcs3gdOptions::Norm::per_tensor);
  EXPECT_EQ(built.wd_exclude, Dcs3gdOptions::WdExclude::bn);
  EXPECT_FALSE(built.correct_after_warmup);
  EXPECT_DOUBLE_EQ(built.lambda0, 0.2);
  Options bad = base_options();
  bad.set("dcs3gd.norm", "l1");
  EXPECT_THROW(Dcs3gdOptions::from_options(bad), Error);
  Options neg = base_options();
  neg.set("dcs3gd.lambda0", "-1");
  EXPECT_THROW(Dcs3gdOptions::from_options(neg), Error);
}

// Same data everywhere: every rank's update is identical, R/N = S exactly (N a power of two),
// D = 0, λ = 0, and W follows serial momentum SGD in MXNet form with the DC-S3GD schedule,
// including across a drain in the middle.
TEST(Dcs3gd, SameDataEqualsSerialMomentumSgd) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  ASSERT_EQ(N & (N - 1), 0) << "this test runs at power-of-two rank counts";
  const double lr = 0.05, mu = 0.9, wd = 1e-3, wd_mult = 2.3;
  const int64_t spe = 5, epochs = 2;  // T = 10, T_w = round(10/6) = 2
  Options opt = base_options();
  Dcs3gdStrategy st(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(kSeed + 17 * R, lr, mu, wd), serial(kSeed, lr, mu, wd);
  TrainContext ctx = dist.context(&opt);
  st.setup(ctx);  // broadcasts rank 0's weights
  ASSERT_EQ(rel_diff(dist.arena->params().to_vector(), serial.arena->params().to_vector()), 0.0);

  const int64_t n = serial.arena->numel();
  std::vector<float> v(size_t(n), 0.f);
  float* w = serial.arena->params().data<float>();
  for (int t = 0; t < spe * epochs; ++t) {
    Tensor x, y;
    global_batch(t, kB, x, y);
    loop_step(st, dist, step_info(int(t), spe, epochs), x, y);
    if (t == 4) st.drain();
    // Serial reference: v = μv − η_t(g + wd_t·W), W += v.
    const double f = dcs3gd_schedule_factor(t, spe * epochs, 2);
    serial.forward_backward(x, y);
    const float* g = serial.arena->grads().data<float>();
    for (int64_t i = 0; i < n; ++i) {
      v[i] = float(mu) * v[i] - float(lr * f) * (g[i] + float(wd * wd_mult * f) * w[i]);
      w[i] += v[i];
    }
    EXPECT_NEAR(st.last_lr(), lr * f, 1e-12);
    if (t > 0 && t != 5) {
      for (const auto& ts : st.last_tensor_stats()) {
        EXPECT_EQ(ts.d_norm, 0.0) << "step " << t << ": D must be exactly 0 with equal data";
        EXPECT_EQ(ts.lambda, 0.0);
      }
    }
  }
  st.drain();
  const double d = rel_diff(dist.arena->params().to_vector(), serial.arena->params().to_vector());
  EXPECT_LT(d, 1e-6) << "rank " << R << " of " << N;
  if (R == 0)
    std::printf("[dcs3gd] same data, %d ranks vs serial MXNet SGD: rel diff %.3g\n", N, d);
}

// One rank (a size-1 communicator split off the world): DC-S3GD at constant lr is momentum SGD;
// compared with dplab's PyTorch-form SGD (buf = μ·buf + g + wd·p; p −= lr·buf), which equals
// the MXNet form v = −lr·buf when lr is constant.
TEST(Dcs3gd, OneRankIsPlainMomentumSgd) {
  const int R = MpiEnv::get().world_rank();
  const double lr = 0.05, mu = 0.9, wd = 1e-3;
  Options opt = base_options();
  opt.set("dcs3gd.wd_mult", "1");
  auto self =
      MpiEnv::get().world_size() == 1
          ? std::make_shared<Topology>(Topology::from_options(opt))
          : std::make_shared<Topology>(Topology::from_options(opt).world().split(R, 0, "self"));
  ASSERT_EQ(self->world().size(), 1);
  Dcs3gdStrategy st(self, opt);
  Replica a(kSeed + R, lr, mu, wd), b(kSeed + R, lr, mu, wd);
  TrainContext ctx = a.context(&opt);
  st.setup(ctx);
  for (int t = 0; t < 8; ++t) {
    Tensor x, y;
    rank_batch(t, R, MpiEnv::get().world_size(), x, y);
    loop_step(st, a, step_info(t, 0, 0), x, y);  // no length known: constant lr
    b.forward_backward(x, y);
    b.sgd->step();
  }
  st.drain();
  const double d = rel_diff(a.arena->params().to_vector(), b.arena->params().to_vector());
  EXPECT_LT(d, 1e-5);
  EXPECT_GT(rel_diff(a.arena->params().to_vector(),
                     Replica(kSeed + R, lr, mu, wd).arena->params().to_vector()),
            1e-3)
      << "the weights must have moved";
}

// Algorithm 1 for N workers, simulated serially with plain loops (each rank runs it whole).
struct Simulation {
  int n;
  double lr, mu, wd, lambda0;
  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<float> wbar;
  std::vector<std::vector<float>> v, s;
  bool pending = false;
  Simulation(int n_, double lr_, double mu_, double wd_, double l0)
      : n(n_), lr(lr_), mu(mu_), wd(wd_), lambda0(l0) {
    for (int j = 0; j < n; ++j) reps.push_back(std::make_unique<Replica>(kSeed, lr, mu, wd));
    wbar = reps[0]->arena->params().to_vector();
    v.resize(size_t(n));
    for (auto& r : v) r.assign(wbar.size(), 0.f);
    s = v;
  }
  void step(int t, double f) {
    for (int j = 0; j < n; ++j) {
      Tensor x, y;
      rank_batch(t, j, n, x, y);
      reps[size_t(j)]->forward_backward(x, y);
    }
    if (pending) {  // W̄ += (Σ_j S_j)/N
      for (size_t i = 0; i < wbar.size(); ++i) {
        float sum = 0;
        for (int j = 0; j < n; ++j) sum += s[size_t(j)][i];
        wbar[i] += sum / float(n);
      }
    }
    for (int j = 0; j < n; ++j) {
      ParamArena& ar = *reps[size_t(j)]->arena;
      float* w = ar.params().data<float>();
      const float* g = ar.grads().data<float>();
      for (const ArenaSegment& seg : ar.segments()) {
        double a = 0, b = 0;
        for (int64_t i = seg.offset; i < seg.offset + seg.numel; ++i) {
          const double d = double(wbar[i]) - w[i];
          a += double(g[i]) * g[i];
          b += (double(g[i]) * g[i] * d) * (double(g[i]) * g[i] * d);
        }
        const double lam = b > 0 ? lambda0 * std::sqrt(a) / std::sqrt(b) : 0.0;
        for (int64_t i = seg.offset; i < seg.offset + seg.numel; ++i) {
          const double d = double(wbar[i]) - w[i];
          const double gc = g[i] + lam * g[i] * g[i] * d;
          float& vi = v[size_t(j)][i];
          vi = float(mu * vi - lr * f * (gc + wd * 2.3 * f * wbar[i]));
          w[i] = wbar[i] + vi;
          s[size_t(j)][i] = vi;
        }
      }
    }
    pending = true;
  }
};

// Different data per rank: rank r's W and the shared W̄ follow the N-replica simulation, and
// W̄ is bitwise equal on all ranks after every step.
TEST(Dcs3gd, MatchesSerialSimulationAndKeepsAverageBitwiseEqual) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const double lr = 0.05, mu = 0.9, wd = 1e-3;
  const int64_t spe = 4, epochs = 2;  // T = 8, T_w = round(8/6) = 1
  Options opt = base_options();
  Dcs3gdStrategy st(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(kSeed, lr, mu, wd);
  TrainContext ctx = dist.context(&opt);
  st.setup(ctx);
  Simulation sim(N, lr, mu, wd, 0.2);
  double worst_w = 0, worst_wbar = 0;
  for (int t = 0; t < spe * epochs; ++t) {
    Tensor x, y;
    rank_batch(t, R, N, x, y);
    loop_step(st, dist, step_info(t, spe, epochs), x, y);
    sim.step(t, dcs3gd_schedule_factor(t, spe * epochs, 1));
    ASSERT_TRUE(bitwise_equal_on_all_ranks(st.topology().world(), st.average_weights()))
        << "W̄ differs between ranks after step " << t;
    // W = W̄ + S on every rank (up to the rounding of that one addition).
    const auto w = dist.arena->params().to_vector(), wb = st.average_weights().to_vector(),
               s = st.send_buffer().to_vector();
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_LE(std::abs(double(w[i]) - wb[i] - s[i]), 1e-6 * (std::abs(wb[i]) + 1e-3)) << i;
    worst_w = std::max(worst_w, rel_diff(w, sim.reps[size_t(R)]->arena->params().to_vector()));
    worst_wbar = std::max(worst_wbar, rel_diff(wb, sim.wbar));
    if (N > 1 && t > 0) {
      double lam = 0;
      for (const auto& ts : st.last_tensor_stats()) lam += ts.lambda;
      EXPECT_GT(lam, 0.0) << "different data must give D != 0 and a correction";
    }
  }
  EXPECT_LT(worst_w, 1e-4) << "rank " << R;
  EXPECT_LT(worst_wbar, 1e-4) << "rank " << R;
  if (R == 0)
    std::printf("[dcs3gd] %d ranks vs serial simulation: W rel diff %.3g, W̄ rel diff %.3g\n", N,
                worst_w, worst_wbar);
}

// ‖λ·g⊙g⊙D‖ = λ0·‖g‖ after a corrected step. With μ = 0 and wd = 0 the update is S = −η·g̃,
// so the correction g̃ − g is recovered from S and checked against g⊙g⊙D computed here from
// W before the step and W̄ after it.
void check_correction_norm(const std::string& norm) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const double lr = 0.1, lambda0 = 0.2;
  Options opt = base_options();
  opt.set("dcs3gd.norm", norm);
  Dcs3gdStrategy st(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(kSeed, lr, 0.0, 0.0);
  TrainContext ctx = dist.context(&opt);
  st.setup(ctx);
  const auto& segs = dist.arena->segments();
  for (int t = 0; t < 3; ++t) {
    Tensor x, y;
    rank_batch(t, R, N, x, y);
    const StepInfo info = step_info(t, 0, 0);
    dist.arena->zero_grad();
    st.before_forward(info);
    backward(cross_entropy(dist.model->forward(x), y));
    const auto w_old = dist.arena->params().to_vector();
    const auto g = dist.arena->grads().to_vector();
    st.after_backward(info);
    const auto wbar = st.average_weights().to_vector(), s = st.send_buffer().to_vector();
    double corr2_all = 0, g2_all = 0, ggd2_all = 0;
    std::vector<double> corr2(segs.size()), g2(segs.size()), ggd2(segs.size()), dot(segs.size());
    for (size_t k = 0; k < segs.size(); ++k) {
      for (int64_t i = segs[k].offset; i < segs[k].offset + segs[k].numel; ++i) {
        const double corr = -double(s[i]) / lr - g[i];  // g̃ − g
        const double ggd = double(g[i]) * g[i] * (double(wbar[i]) - w_old[i]);
        corr2[k] += corr * corr;
        g2[k] += double(g[i]) * g[i];
        ggd2[k] += ggd * ggd;
        dot[k] += corr * ggd;
      }
      corr2_all += corr2[k];
      g2_all += g2[k];
      ggd2_all += ggd2[k];
    }
    if (t == 0 || N == 1) {  // nothing received yet / one rank: D = 0, no correction
      for (size_t k = 0; k < segs.size(); ++k)
        EXPECT_LT(std::sqrt(corr2[k]), 1e-5 * std::sqrt(g2[k])) << "step " << t << " " << k;
      continue;
    }
    for (size_t k = 0; k < segs.size(); ++k) {
      if (ggd2[k] == 0) continue;
      // The correction points along g⊙g⊙D (cosine 1) ...
      EXPECT_NEAR(dot[k] / std::sqrt(corr2[k] * ggd2[k]), 1.0, 1e-4) << segs[k].name;
      // ... with norm λ0·‖g_k‖ per tensor.
      if (norm == "per_tensor") {
        EXPECT_NEAR(std::sqrt(corr2[k]) / std::sqrt(g2[k]), lambda0, 1e-4 * lambda0)
            << segs[k].name << " step " << t;
      }
      EXPECT_NEAR(st.last_tensor_stats()[k].g_norm, std::sqrt(g2[k]), 1e-6 * std::sqrt(g2[k]));
    }
    if (norm == "global") {
      EXPECT_NEAR(std::sqrt(corr2_all) / std::sqrt(g2_all), lambda0, 1e-4 * lambda0);
    }
  }
}

TEST(Dcs3gd, CorrectionNormIsLambda0TimesGradNormPerTensor) {
  check_correction_norm("per_tensor");
}
TEST(Dcs3gd, CorrectionNormIsLambda0TimesGradNormGlobal) {
  check_correction_norm("global");
}

// λ0 = 0: the ablation is the uncompensated stale update (g̃ = g), still communicating.
TEST(Dcs3gd, LambdaZeroDisablesCompensation) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt = base_options();
  opt.set("dcs3gd.lambda0", "0");
  Dcs3gdStrategy st(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(kSeed, 0.1, 0.0, 0.0);
  TrainContext ctx = dist.context(&opt);
  st.setup(ctx);
  for (int t = 0; t < 3; ++t) {
    Tensor x, y;
    rank_batch(t, R, N, x, y);
    loop_step(st, dist, step_info(t, 0, 0), x, y);
    const auto g = dist.arena->grads().to_vector(), s = st.send_buffer().to_vector();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(s[i], -float(0.1) * g[i]) << i;
    for (const auto& ts : st.last_tensor_stats()) EXPECT_EQ(ts.lambda, 0.0);
  }
  EXPECT_EQ(st.take_stats().allreduces, 2);  // steps 1 and 2 communicate step 0's and 1's Δw
}

// After drain(): nothing in flight, no update pending, W = W̄ bitwise on every rank, and W̄ is
// the average of the ranks' weights before the drain. A later step is a plain local step.
TEST(Dcs3gd, DrainLeavesNothingInFlight) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt = base_options();
  Dcs3gdStrategy st(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(kSeed, 0.05, 0.9, 1e-3);
  TrainContext ctx = dist.context(&opt);
  st.setup(ctx);
  for (int t = 0; t < 3; ++t) {
    Tensor x, y;
    rank_batch(t, R, N, x, y);
    loop_step(st, dist, step_info(t, 0, 0), x, y);
  }
  EXPECT_FALSE(st.in_flight());
  EXPECT_TRUE(st.update_pending());
  Tensor mean = dist.arena->params().clone();
  st.topology().world().allreduce(mean, ReduceOp::average);
  st.drain();
  EXPECT_FALSE(st.in_flight());
  EXPECT_FALSE(st.update_pending());
  const auto w = dist.arena->params().to_vector(), wb = st.average_weights().to_vector();
  ASSERT_EQ(std::memcmp(w.data(), wb.data(), w.size() * sizeof(float)), 0) << "W != W̄";
  EXPECT_TRUE(bitwise_equal_on_all_ranks(st.topology().world(), dist.arena->params()));
  EXPECT_LT(rel_diff(wb, mean.to_vector()), 1e-6);
  const CommStats cs = st.take_stats();
  EXPECT_EQ(cs.allreduces, 3);  // steps 1, 2 and the drain
  // A second drain has nothing to send.
  st.drain();
  EXPECT_EQ(st.take_stats().allreduces, 0);
  // The next step starts from W̄ with nothing in flight: D = 0, no correction.
  Tensor x, y;
  rank_batch(3, R, N, x, y);
  loop_step(st, dist, step_info(3, 0, 0), x, y);
  for (const auto& ts : st.last_tensor_stats()) EXPECT_EQ(ts.d_norm, 0.0);
  EXPECT_EQ(st.take_stats().allreduces, 0);
}

// With a slow link (the link.inter shorthand, each rank its own node, in virtual time) the
// allreduce started in before_forward is in flight while "compute" runs, so the exposed wait
// is a small part of the time in flight.
TEST(Dcs3gd, AllreduceOverlapsComputeOnSlowLink) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt = base_options();
  opt.set("ranks_per_node", "1");
  opt.set("link.inter", "10ms,1GB/s");  // an allreduce costs 2(N-1) x 10 ms + its bytes
  // The options' platform with the clock in manual mode: compute is only what the test adds.
  CommConfig cfg = CommConfig::from_options(opt);
  ASSERT_TRUE(cfg.platform);
  cfg.virtual_time =
      std::make_shared<cluster::VirtualTime>(*cfg.platform, cluster::shape_of(*cfg.platform, N, 1),
                                             cluster::VirtualClock::Compute::manual);
  cluster::VirtualClock& clock = cfg.virtual_time->clock;
  Dcs3gdStrategy st(std::make_shared<Topology>(mpi_world(cfg)), opt);
  Replica dist(kSeed, 0.05, 0.9, 0.0);
  TrainContext ctx = dist.context(&opt);
  // The run's time base is the rank's virtual clock, as the driver hands it on a virtual cluster
  // (core/time_source.h): DC-S3GD's statistics then read modelled time, whatever the host's load.
  ctx.time = std::make_shared<cluster::VirtualTimeSource>(cfg.virtual_time);
  st.setup(ctx);
  (void)st.take_stats();
  const double comm_s = 2.0 * (N - 1) * 10e-3;
  const double compute_s = comm_s + 0.05;
  const int steps = 4;
  for (int t = 0; t < steps; ++t) {
    Tensor x, y;
    rank_batch(t, R, N, x, y);
    const StepInfo info = step_info(t, 0, 0);
    dist.arena->zero_grad();
    st.before_forward(info);
    backward(cross_entropy(dist.model->forward(x), y));
    clock.add_compute(compute_s);
    st.after_backward(info);
  }
  const CommStats cs = st.take_stats();
  EXPECT_EQ(cs.allreduces, steps - 1);
  if (N > 1) {
    EXPECT_GE(cs.in_flight_s, 0.9 * comm_s * (steps - 1));
    // Compute (comm_s + 50 ms) outlasts each allreduce, so in virtual time nothing is exposed;
    // an exposed wait measured on the wall clock would show the host's scheduling instead.
    EXPECT_LT(cs.exposed_wait_s, 0.3 * cs.in_flight_s)
        << "in flight " << cs.in_flight_s << " s, exposed " << cs.exposed_wait_s << " s";
  }
}

}  // namespace
}  // namespace dplab
