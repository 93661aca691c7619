// Oscars on 2 and 4 ranks (comm/algorithms/oscars.h): ranks with different tau run the tick
// loop of the trainer without deadlock, every round (and epoch) ends in bitwise identical
// parameters (allgather and compare bytes), and the result equals a serial simulation of the N
// workers (tau_i local SGD steps each, then the uniform average, Eq. 4). A second test profiles
// real iteration times with an injected slowdown and re-profiles.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"
#include "virtual_world.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "dplab/comm/algorithms/oscars.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/cluster/virtual_time_source.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/slowdown.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
#include "dplab/core/state_dict.h"
#include "dplab/core/usage_error.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

constexpr int kB = 4;

// Worker `rank`'s batch at (epoch, tick): deterministic, different per rank.
void batch(int rank, int64_t epoch, int64_t tick, Tensor& x, Tensor& y) {
  test::rank_batch(rank, epoch, tick, kB, x, y);
}

struct Replica : test::MnistReplica {
  // momentum buffers stay local (not averaged)
  explicit Replica(uint64_t seed) : MnistReplica(seed, 0.05, 0.9) {}
  void step(int rank, int64_t epoch, int64_t tick) {
    Tensor x, y;
    batch(rank, epoch, tick, x, y);
    sgd->zero_grad();
    backward(cross_entropy(model->forward(x), y));
    sgd->step();
  }
};

void average_replicas(std::vector<Replica>& reps) {
  const Tensor avg = test::mean_params(reps);
  for (auto& r : reps) {
    Tensor p = r.arena->params();  // a handle on the arena's storage
    p.copy_(avg);
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

// All ranks hold the same bytes: allgather the parameters and compare every block with ours.
void expect_identical_bytes(Communicator& world, const Tensor& params, const std::string& when) {
  const int64_t n = params.numel();
  Tensor all =
      Tensor::from_vector(std::vector<float>(size_t(n * world.size()), 0.f), {n * world.size()});
  world.allgather(params, all);
  const float* a = all.data<float>();
  const float* p = params.data<float>();
  for (int r = 0; r < world.size(); ++r)
    EXPECT_EQ(std::memcmp(a + r * n, p, size_t(n) * sizeof(float)), 0)
        << "rank " << world.rank() << " and rank " << r << " differ " << when;
}

// The trainer's loop (train/loop/trainer.cpp) for `epochs` x `steps` ticks.
template <typename OnCompute>
void run_loop(Strategy& s, Replica& rep, int64_t epochs, int64_t steps, OnCompute on_compute,
              const std::function<void(int64_t, int64_t)>& after_tick = {}) {
  int64_t global = 0;
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t k = 0; k < steps; ++k, ++global) {
      StepInfo info;
      info.epoch = e;
      info.step_in_epoch = k;
      info.global_step = global;
      info.steps_per_epoch = steps;
      info.total_epochs = epochs;
      const StepPlan plan = s.plan(info);
      if (plan.compute) on_compute(e, k);
      s.after_step(info);
      if (after_tick) after_tick(e, k);
    }
    s.end_epoch(e, 0.0);
    if (e + 1 == epochs) s.finish_training();
    s.drain();
  }
}

TEST(Oscars, DifferentTauMatchesSerialAndStaysIdentical) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  // Fixed iteration times (no profiling) chosen so that tau differs between ranks.
  const std::vector<int64_t> pool = {300000, 450000, 130000, 250000};
  std::vector<int64_t> t(pool.begin(), pool.begin() + N);
  std::string ts;
  for (auto v : t) ts += (ts.empty() ? "" : ",") + std::to_string(v);
  Options opt;
  opt.set("oscars.t_us", ts);
  opt.set("oscars.M", "6");
  opt.set("comm.timeout_s", "20");  // a deadlock fails the test instead of hanging
  OscarsStrategy s(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  OscarsSearchOptions so;
  so.M = 6;
  const OscarsSchedule expect = oscars_search(t, so);
  const std::vector<int64_t> tau = expect.tau;
  if (N > 1) {
    ASSERT_NE(*std::min_element(tau.begin(), tau.end()), *std::max_element(tau.begin(), tau.end()));
  }
  const int64_t Rt = *std::max_element(tau.begin(), tau.end());

  Replica dist(77 + uint64_t(R));  // different seeds: setup() must broadcast rank 0's
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  s.setup(ctx);
  EXPECT_EQ(s.schedule().tau, tau);
  EXPECT_EQ(s.schedule().T_us, expect.T_us);

  constexpr int64_t kEpochs = 2, kSteps = 8;  // 8 ticks: the last round of an epoch is cut
  auto world_ptr = mpi_world();
  Communicator& world = *world_ptr;
  int64_t computed = 0;
  run_loop(
      s, dist, kEpochs, kSteps,
      [&](int64_t e, int64_t k) {
        dist.step(R, e, k);
        ++computed;
      },
      [&](int64_t e, int64_t k) {
        const bool round_end = (k + 1) % Rt == 0 || k + 1 == kSteps;
        if (round_end)
          expect_identical_bytes(world, dist.arena->params(),
                                 "after epoch " + std::to_string(e) + " tick " + std::to_string(k));
      });

  // Serial simulation of all N workers with the same batches and tau.
  std::vector<Replica> reps;
  for (int i = 0; i < N; ++i) reps.emplace_back(77);
  int64_t rounds = 0;
  for (int64_t e = 0; e < kEpochs; ++e) {
    int64_t pos = 0;
    for (int64_t k = 0; k < kSteps; ++k) {
      for (int i = 0; i < N; ++i)
        if (pos < tau[size_t(i)]) reps[size_t(i)].step(i, e, k);
      if (++pos == Rt || k + 1 == kSteps) {
        average_replicas(reps);
        pos = 0;
        ++rounds;
      }
    }
  }
  const double d = rel_diff(dist.arena->params(), reps[size_t(R)].arena->params());
  EXPECT_LT(d, 1e-5) << "rank " << R;
  // Rank R computed tau_R ticks per full round.
  int64_t expect_computed = 0;
  for (int64_t k = 0, pos = 0; k < kSteps; ++k, ++pos) {
    if (pos == Rt) pos = 0;
    if (pos < tau[size_t(R)]) ++expect_computed;
  }
  EXPECT_EQ(computed, kEpochs * expect_computed);
  EXPECT_EQ(s.rounds(), rounds);
  const CommStats st = s.take_stats();
  EXPECT_EQ(st.allreduces, N > 1 ? rounds : 0);
  if (R == 0)
    std::printf("[oscars] %d ranks tau_max %lld rounds %lld rel diff %.3g\n", N, (long long)Rt,
                (long long)rounds, d);
}

// The predicted idle per round, max_j tau_j t_j - tau_i t_i, worked by hand:
// 2 ranks, t = [100, 130] ms, M = 3: the candidates 130, 200, ..., 800 ms (900 breaks the
// constraint, 9 - 6 = 3) have waits 30, 70, 60, 40, 90, 10, ...; the least is 10 ms at T* = 400,
// tau = [4, 3], tau*t = [400, 390]: rank 1 idles 10 ms. 4 ranks, t = [100, 130, 250, 250] ms,
// M = 6 (notes §5.1): T* = 520, tau = [5, 4, 2, 2], tau*t = [500, 520, 500, 500].
TEST(Oscars, PredictedAndMeasuredWaitPerRoundInState) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  if (N != 2 && N != 4) GTEST_SKIP() << "hand-worked for 2 and 4 ranks";
  const std::string ts = N == 2 ? "100000,130000" : "100000,130000,250000,250000";
  const std::vector<double> pred =
      N == 2 ? std::vector<double>{0, 10000} : std::vector<double>{20000, 0, 20000, 20000};
  Options opt;
  opt.set("oscars.t_us", ts);
  opt.set("oscars.M", N == 2 ? "3" : "6");
  opt.set("comm.timeout_s", "20");
  OscarsStrategy s(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica rep(5);
  TrainContext ctx;
  ctx.model = rep.model.get();
  ctx.arena = rep.arena.get();
  ctx.optimizer = rep.sgd.get();
  ctx.options = &opt;
  s.setup(ctx);
  EXPECT_EQ(s.state().at("wait_pred_us"), pred[size_t(R)]);
  for (int i = 0; i < N; ++i)  // every rank's prediction, on every rank (one shared plan)
    EXPECT_EQ(s.state().at(fmt::format("wait_pred_us_r{}", i)), pred[size_t(i)]) << "rank " << i;
  EXPECT_EQ(s.state().count("wait_meas_us"), 0u);  // no round averaged yet
  run_loop(s, rep, 1, 10, [&](int64_t, int64_t) {});
  ASSERT_GT(s.rounds(), 0);
  EXPECT_GE(s.state().at("wait_meas_us"), 0.0);
  EXPECT_GE(s.state().at("wait_meas_last_us"), 0.0);
  EXPECT_EQ(s.state().at("wait_pred_us"), pred[size_t(R)]);
}

// The plan's times are saved, so a resumed run predicts the waits of the plan it resumed (not
// of its own set-up); a checkpoint without them (written before they were saved) loads with the
// predictions unknown.
TEST(Oscars, PredictedWaitsFollowTheResumedPlan) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  if (N != 2 && N != 4) GTEST_SKIP() << "hand-worked for 2 and 4 ranks";
  const auto make = [&](const std::string& ts, Replica& rep, Options& opt) {
    opt.set("oscars.t_us", ts);
    opt.set("oscars.M", N == 2 ? "3" : "6");
    opt.set("comm.timeout_s", "20");
    auto s = std::make_unique<OscarsStrategy>(
        std::make_shared<Topology>(Topology::from_options(opt)), opt);
    TrainContext ctx;
    ctx.model = rep.model.get();
    ctx.arena = rep.arena.get();
    ctx.optimizer = rep.sgd.get();
    ctx.options = &opt;
    s->setup(ctx);
    return s;
  };
  // The hand values of PredictedAndMeasuredWaitPerRoundInState.
  const std::vector<double> pred =
      N == 2 ? std::vector<double>{0, 10000} : std::vector<double>{20000, 0, 20000, 20000};
  Replica rep_a(5), rep_b(5);
  Options opt_a, opt_b;
  auto a = make(N == 2 ? "100000,130000" : "100000,130000,250000,250000", rep_a, opt_a);
  StateDict saved;
  a->save_state(saved);
  // b's own plan (equal times, every tau 1) predicts no wait anywhere; after loading a's state
  // its taus and predictions are a's.
  auto b = make(N == 2 ? "100000,100000" : "100000,100000,100000,100000", rep_b, opt_b);
  EXPECT_EQ(b->state().at("wait_pred_us"), 0.0);
  b->load_state(saved);
  EXPECT_EQ(b->state().at("wait_pred_us"), pred[size_t(R)]);
  for (int i = 0; i < N; ++i)
    EXPECT_EQ(b->state().at(fmt::format("wait_pred_us_r{}", i)), pred[size_t(i)]) << "rank " << i;
  std::map<std::string, std::string> values = saved.values();
  ASSERT_EQ(values.erase("plan_t_us"), 1u);
  StateDict old_format;
  old_format.assign(saved.tensors(), values);
  b->load_state(old_format);
  EXPECT_EQ(b->state().count("wait_pred_us"), 0u);
  EXPECT_EQ(b->state().count("wait_pred_us_r0"), 0u);
  EXPECT_EQ(b->state().at("tau_r0"), a->state().at("tau_r0"));
}

TEST(Oscars, ProfilesSlowedRankAndReprofilesWithoutDeadlock) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  ASSERT_GE(N, 2) << "registered for 2 and 4 ranks";
  Options opt;
  opt.set("oscars.profile_discard", "1");
  opt.set("oscars.profile_measure", "5");
  opt.set("oscars.reprofile_rounds", "2");
  opt.set("oscars.M", "4");
  opt.set("comm.timeout_s", "20");
  OscarsStrategy s(std::make_shared<Topology>(Topology::from_options(opt)), opt);
  Replica dist(5);
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  s.setup(ctx);
  // The last rank is 3x slower; 6 ms of sleep-as-work in every iteration dominates the tiny
  // model's compute so the ratio survives a busy machine.
  Slowdown slow(R == N - 1 ? 3.0 : 1.0);
  run_loop(s, dist, 2, 12, [&](int64_t e, int64_t k) {
    slow.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(6));
    dist.step(R, e, k);
    slow.pause();
  });
  EXPECT_FALSE(s.profiling());
  EXPECT_GE(s.state().at("searches"), 2.0);  // the first search and at least one re-profile
  const auto& tau = s.schedule().tau;
  ASSERT_EQ(int(tau.size()), N);
  EXPECT_GT(tau[0], tau[size_t(N - 1)])
      << "the fast rank must get more local steps; T* " << s.schedule().T_us << " us, resolution "
      << s.schedule().resolution_us << " us, this rank's t " << s.state().at("t_us") << " us";
  // Every rank computed the same schedule.
  auto world_ptr = mpi_world();
  Communicator& world = *world_ptr;
  Tensor T = Tensor::from_vector({float(s.schedule().T_us)}, {1});
  Tensor Tmax = T.clone();
  world.allreduce(Tmax, ReduceOp::max);
  EXPECT_EQ(T.to_vector()[0], Tmax.to_vector()[0]);
  expect_identical_bytes(world, dist.arena->params(), "at the end");
  if (R == 0)
    std::printf("[oscars] profiled: T* %lld us, tau0 %lld, tau_last %lld\n",
                (long long)s.schedule().T_us, (long long)tau[0], (long long)tau[size_t(N - 1)]);
}

// Issue #33 item 5: identical ranks get tau = 1 on measured times. Every rank does the same
// work per iteration (the same model step on the same batch and a fixed arithmetic loop of a few
// ms); the profiles differ by measurement noise only. The search's resolution (the widest
// 10th-to-90th-percentile range of the ranks' samples, at least 10% of the fastest time) makes
// those times equal: T* = t_max, tau = 1 on every rank, in the first search and in every
// re-profile (one per round here, about 20 searches per run).
// The times are measured on a virtual cluster's clock in measured mode: each rank's thread CPU
// time. Wall time on this test host (2 cores shared with builds and other tests) is not a fair
// measure of identical work: a rank descheduled for part of a window measured 17% slower than
// its twin (tau [7, 6]) although both did the same arithmetic, which no resolution should call
// equal. CPU time leaves out the time a rank waits for a core.
TEST(Oscars, IdenticalRanksMeasuredGetTauOne) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options opt;
  opt.set("oscars.profile_discard", "2");
  opt.set("oscars.profile_measure", "10");
  opt.set("oscars.reprofile_rounds", "1");
  opt.set("comm.timeout_s", "20");
  CommConfig cfg;
  const cluster::Platform p = test::test_platform();
  cfg.virtual_time = std::make_shared<cluster::VirtualTime>(
      p, cluster::shape_of(p, N, 1), cluster::VirtualClock::Compute::measured);
  OscarsStrategy s(std::make_shared<Topology>(mpi_world(cfg)), opt);
  Replica dist(5);
  TrainContext ctx;
  ctx.model = dist.model.get();
  ctx.arena = dist.arena.get();
  ctx.optimizer = dist.sgd.get();
  ctx.options = &opt;
  ctx.time = std::make_shared<cluster::VirtualTimeSource>(cfg.virtual_time);
  s.setup(ctx);
  int64_t searches = 0, checked = 0;
  volatile double sink = 0;
  run_loop(
      s, dist, 2, 16,
      [&](int64_t e, int64_t k) {
        dist.step(0, e, k);  // the same batch on every rank: identical work
        double x = 1;
        for (int i = 0; i < 2000000; ++i) x = std::sqrt(x + i);  // a few ms of the same work
        sink = sink + x;
      },
      [&](int64_t, int64_t) {
        if (s.profiling() || s.state().at("searches") == double(searches)) return;
        searches = int64_t(s.state().at("searches"));
        const OscarsSchedule& sc = s.schedule();
        EXPECT_EQ(sc.tau, std::vector<int64_t>(size_t(N), 1))
            << "search " << searches << ": T* " << sc.T_us << " us, resolution " << sc.resolution_us
            << " us, this rank's t " << s.state().at("t_us") << " us";
        EXPECT_GE(sc.resolution_us, 0);
        ++checked;
        if (R == 0 && searches == 1)
          std::printf("[oscars] identical ranks: T* %lld us, resolution %lld us, tau0 %lld\n",
                      (long long)sc.T_us, (long long)sc.resolution_us, (long long)sc.tau[0]);
      });
  EXPECT_GE(checked, 10);  // the first search and the re-profiles after it
}

// Near-equal fixed times (as identical ranks would measure them), 100000 and 100003 us: with
// the default resolution for given times (0, Eq. 3 exactly) the first zero wait is the common
// multiple 100000 * 100003 us, tau = [100003, 100000] (the constraint holds there: 3 < M = 4);
// with oscars.resolution_us = 5 (>= the 3 us difference) every rank gets tau = 1, T* = t_max.
TEST(Oscars, NearEqualFixedTimesWithinTheResolutionGetTauOne) {
  const int N = MpiEnv::get().world_size();
  const std::string ts = N == 2 ? "100000,100003" : "100000,100003,100000,100003";
  for (const bool with_resolution : {false, true}) {
    Options opt;
    opt.set("oscars.t_us", ts);
    if (with_resolution) opt.set("oscars.resolution_us", "5");
    opt.set("comm.timeout_s", "20");
    OscarsStrategy s(std::make_shared<Topology>(Topology::from_options(opt)), opt);
    Replica rep(5);
    TrainContext ctx;
    ctx.model = rep.model.get();
    ctx.arena = rep.arena.get();
    ctx.optimizer = rep.sgd.get();
    ctx.options = &opt;
    s.setup(ctx);
    const auto& tau = s.schedule().tau;
    if (with_resolution) {
      EXPECT_EQ(tau, std::vector<int64_t>(size_t(N), 1));
      EXPECT_EQ(s.schedule().T_us, 100003);
      EXPECT_EQ(s.state().at("resolution_us"), 5.0);
    } else {
      EXPECT_EQ(s.schedule().T_us, int64_t(100000) * 100003);
      EXPECT_EQ(*std::max_element(tau.begin(), tau.end()), 100003);
      EXPECT_EQ(s.state().at("resolution_us"), 0.0);
    }
  }
  Options bad;
  bad.set("oscars.resolution_us", "fine");
  EXPECT_THROW(OscarsStrategy(std::make_shared<Topology>(Topology::from_options(bad)), bad),
               UsageError);
}

}  // namespace
}  // namespace dplab
