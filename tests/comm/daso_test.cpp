// DASO on 8 ranks as 4 virtual nodes x 2 (ranks_per_node = 2), mnist_cnn, ALGORITHMS.md §3.
// Every rank gathers all ranks' parameters just before and just after each after_step() and
// recomputes, serially and in double precision, what the global syncs of that batch must have
// produced: Eq. 1 merges by the right (rotating) group with the states sent S' batches
// earlier, plain averages on blocking batches, node-local broadcasts from the group member, and
// nothing at all on other batches. Ranks of one node are perturbed apart before each sync so
// that using the wrong group member would show.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "common/mnist_replica.h"

#include <cmath>
#include <map>

#include "dplab/comm/algorithms/daso.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autograd.h"
#include "dplab/core/dtype.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

constexpr int kB = 4;  // per-rank batch

// Rank `r`'s batch of step `step`: images in [0, 1) and labels, different on every rank.
void rank_batch(int step, int r, Tensor& x, Tensor& y) {
  std::vector<float> xv(static_cast<size_t>(kB) * 28 * 28);
  std::vector<int64_t> yv(kB);
  uint64_t h = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(step * 131 + r + 1);
  test::fill_xorshift(xv, h);
  for (int i = 0; i < kB; ++i) yv[i] = static_cast<int64_t>((step * 7 + r * 5 + i * 3) % 10);
  x = Tensor::from_vector(xv, {kB, 1, 28, 28});
  y = Tensor::from_vector_i64(yv, {kB});
}

struct Replica : test::MnistReplica {
  explicit Replica(uint64_t seed) : MnistReplica(seed, 0.05, 0.9) {}
};

using States = std::vector<std::vector<double>>;  // [world rank][element]

States gather(Communicator& world, const Tensor& params) {
  const int W = world.size();
  const int64_t n = params.numel();
  Tensor all = Tensor::empty({W * n});
  world.allgather(params, all);
  const auto v = all.to_vector();
  States s(W, std::vector<double>(static_cast<size_t>(n)));
  for (int r = 0; r < W; ++r)
    for (int64_t i = 0; i < n; ++i) s[r][i] = v[static_cast<size_t>(r * n + i)];
  return s;
}

// Makes the two ranks of every node differ (by up to ~1e-2), differently at every batch.
void perturb(Tensor& params, int rank, int step) {
  std::vector<float> d(static_cast<size_t>(params.numel()));
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = 1e-3f * static_cast<float>(rank + 1) * static_cast<float>(int((i + step) % 7) - 3) / 3.f;
  add_(params, Tensor::from_vector(d, {params.numel()}));
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

struct DasoRun {
  Options opt;
  std::unique_ptr<Replica> rep;  // declared first: destroyed after the strategy's hooks
  std::unique_ptr<DasoStrategy> strategy;
  TrainContext ctx;
  int R = 0, W = 0, G = 0, P = 0;
  explicit DasoRun(const std::map<std::string, std::string>& kv) {
    opt.set("ranks_per_node", "2");
    for (auto& [k, v] : kv) opt.set(k, v);
    strategy = std::make_unique<DasoStrategy>(
        std::make_shared<Topology>(Topology::from_options(opt)), opt);
    R = strategy->rank();
    W = strategy->world_size();
    G = strategy->topology().ranks_per_node();
    P = strategy->topology().num_nodes();
    rep = std::make_unique<Replica>(77 + R);  // different seeds: setup broadcasts rank 0's
    ctx.model = rep->model.get();
    ctx.arena = rep->arena.get();
    ctx.optimizer = rep->sgd.get();
    ctx.options = &opt;
    strategy->setup(ctx);
  }
  // One iteration up to (not including) after_step.
  void step_until_after_step(const StepInfo& info) {
    const StepPlan plan = strategy->plan(info);
    if (plan.zero_grad) rep->sgd->zero_grad();
    strategy->before_forward(info);
    Tensor x, y;
    rank_batch(static_cast<int>(info.global_step), R, x, y);
    backward(cross_entropy(rep->model->forward(x), y));
    strategy->after_backward(info);
    if (plan.optimizer_step) rep->sgd->step();
  }
  bool bitwise_equal_everywhere() {
    Tensor mx = rep->arena->params().clone(), mn = rep->arena->params().clone();
    strategy->topology().world().allreduce(mx, ReduceOp::max);
    Tensor neg = rep->arena->params().clone();
    mul_(neg, -1.f);
    strategy->topology().world().allreduce(neg, ReduceOp::max);  // -min
    const auto a = rep->arena->params().to_vector(), b = mx.to_vector(), c = neg.to_vector();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] || a[i] != -c[i]) return false;
    return true;
  }
};

// One global sync of the hand-written schedules: sent after batch `send`, merged after batch
// `merge` (= send: blocking, a plain average) by the ranks of local rank `group`, with S' = S.
DasoSync sync(int64_t send, int64_t merge, int group, int S) {
  DasoSync d;
  d.send_batch = send;
  d.merge_batch = merge;
  d.group = group;
  d.S = S;
  return d;
}

// Runs one epoch of T batches with per-batch perturbations and checks every after_step against
// the serial recomputation, which follows `sched`: the epoch's syncs written out by hand from
// docs/algorithms/daso.md (send when t % B == 0, S' = min(S, T-1-t), the last batch a blocking
// plain average, groups in rotation from 0), never the strategy's own schedule. That the
// strategy planned the same syncs is checked too. `wire_bf16`: blocking syncs travel as bf16
// (warm-up), so their expected value is the average of the bf16-rounded member states within
// the bf16 bound.
void check_epoch(DasoRun& run, int64_t T, int64_t total_epochs, bool wire_bf16,
                 const std::vector<DasoSync>& sched) {
  Communicator& world = run.strategy->topology().world();
  const int G = run.G, P = run.P, W = run.W;
  std::map<int64_t, States> sent;  // batch -> states after that batch (what members sent)
  for (int64_t t = 0; t < T; ++t) {
    StepInfo info;
    info.epoch = 0;
    info.step_in_epoch = t;
    info.global_step = t;
    info.steps_per_epoch = T;
    info.total_epochs = total_epochs;
    run.step_until_after_step(info);
    Tensor params = run.rep->arena->params();
    perturb(params, run.R, static_cast<int>(t));
    const States before = gather(world, params);
    run.strategy->after_step(info);
    const States after = gather(world, params);
    if (t == 0) {  // the strategy's plan of the epoch, against the hand-written one
      const auto& planned = run.strategy->epoch_schedule();
      ASSERT_EQ(planned.size(), sched.size());
      for (size_t i = 0; i < sched.size(); ++i) {
        EXPECT_EQ(planned[i].send_batch, sched[i].send_batch) << "sync " << i;
        EXPECT_EQ(planned[i].merge_batch, sched[i].merge_batch) << "sync " << i;
        EXPECT_EQ(planned[i].group, sched[i].group) << "sync " << i;
        EXPECT_EQ(planned[i].S, sched[i].S) << "sync " << i;
      }
    }

    States expect = before;
    bool any = false;
    // Stale receives merged after batch t, in send order: Eq. 1 on the member's current state,
    // then every rank of the node takes the member's result.
    for (const DasoSync& s : sched) {
      if (s.blocking() || s.merge_batch != t) continue;
      any = true;
      ASSERT_TRUE(sent.count(s.send_batch)) << "merge at " << t << " of a send never seen";
      const States& x0 = sent[s.send_batch];
      const double w = 2.0 * s.S, d = w + P;
      for (int n = 0; n < P; ++n) {
        const int m = n * G + s.group;
        std::vector<double> merged(expect[m].size());
        for (size_t i = 0; i < merged.size(); ++i) {
          double sum = 0;
          for (int n2 = 0; n2 < P; ++n2) sum += x0[n2 * G + s.group][i];
          merged[i] = (w * expect[m][i] + sum) / d;
        }
        for (int l = 0; l < G; ++l) expect[n * G + l] = merged;
      }
    }
    // Blocking syncs after batch t: plain average over the group, broadcast in every node.
    std::vector<double> bound;  // per element, for the bf16 wire
    for (const DasoSync& s : sched) {
      if (!s.blocking() || s.send_batch != t) continue;
      any = true;
      std::vector<double> avg(expect[0].size(), 0.0);
      bound.assign(avg.size(), 0.0);
      for (int n = 0; n < P; ++n)
        for (size_t i = 0; i < avg.size(); ++i) {
          double v = expect[n * G + s.group][i];
          if (wire_bf16) v = bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
          avg[i] += v / P;
          bound[i] += std::fabs(v) / P;
        }
      for (int r = 0; r < W; ++r) expect[r] = avg;
    }
    if (!any) {
      // No sync: after_step must not touch the parameters at all.
      for (int r = 0; r < W; ++r) EXPECT_EQ(max_abs_diff(before[r], after[r]), 0.0) << t;
    }
    for (int r = 0; r < W; ++r) {
      if (wire_bf16 && !bound.empty()) {
        // bf16 wire, f32 accumulation with one bf16 rounding per hop (at most P-1 hops of a
        // ring; 2^-8 relative each) and the final 1/P in f32.
        for (size_t i = 0; i < bound.size(); ++i) {
          const double tol = (P - 1) * std::ldexp(1.0, -8) * bound[i] + 1e-7;
          ASSERT_LE(std::fabs(after[r][i] - expect[r][i]), tol)
              << "rank " << r << " element " << i << " batch " << t;
          // With P = 4 the result times P is the reduced bf16 value: exactly representable.
          const float scaled = static_cast<float>(after[r][i] * P);
          ASSERT_EQ(bf16_to_f32(f32_to_bf16(scaled)), scaled) << "not a bf16 sum: element " << i;
        }
      } else {
        EXPECT_LT(max_abs_diff(after[r], expect[r]), 2e-6) << "rank " << r << " batch " << t;
      }
    }
    sent[t] = after;
  }
}

TEST(Daso, Topology4NodesOf2) {
  DasoRun run({{"daso.phases", "false"}, {"daso.B_max", "4"}});
  ASSERT_EQ(run.W, 8) << "this test runs on 8 ranks";
  EXPECT_EQ(run.G, 2);
  EXPECT_EQ(run.P, 4);
  EXPECT_EQ(run.strategy->topology().cross().size(), 4);
}

// Cycling with B = 2, S = 1, T = 7: sends after 0, 2, 4 (t % 2 == 0), each merged one batch
// later by groups 0, 1, 0; batch 6 is both a send batch and the last: a blocking average by
// group 1.
TEST(Daso, Eq1MergesAndRotationB2S1) {
  DasoRun run({{"daso.phases", "false"}, {"daso.B_max", "2"}, {"daso.S", "1"}});
  check_epoch(run, 7, 1, false,
              {sync(0, 1, 0, 1), sync(2, 3, 1, 1), sync(4, 5, 0, 1), sync(6, 6, 1, 0)});
  EXPECT_EQ(run.strategy->state().at("global_syncs"), 4);
  EXPECT_EQ(run.strategy->state().at("B"), 2);
  EXPECT_EQ(run.strategy->state().at("S"), 1);
}

// S > B: several receives in flight at once, some clipped to the last batch. B = 1, S = 3,
// T = 6: a send after every batch; S' = min(3, 5 - t) = 3, 3, 3, 2, 1, so the sends of batches
// 0, 1, 2 merge after 3, 4, 5 and those of 3 and 4 after 5 as well; batch 5 is the blocking
// average. Groups rotate 0, 1, 0, 1, 0, 1. After batch 5 three stale merges (sent after 2, 3, 4,
// in send order) come before the blocking sync.
TEST(Daso, Eq1MergesWithOverlappingReceivesB1S3) {
  DasoRun run({{"daso.phases", "false"}, {"daso.B_max", "1"}, {"daso.S", "3"}});
  check_epoch(run, 6, 1, false,
              {sync(0, 3, 0, 3), sync(1, 4, 1, 3), sync(2, 5, 0, 3), sync(3, 5, 1, 2),
               sync(4, 5, 0, 1), sync(5, 5, 1, 0)});
  EXPECT_EQ(run.strategy->state().at("global_syncs"), 6);
}

// S = 0: blocking f32 plain averages every 3 batches. T = 7: after batches 0, 3 and 6 (6 is
// also the last), by groups 0, 1, 0; nothing in between.
TEST(Daso, BlockingF32AveragesB3S0) {
  DasoRun run({{"daso.phases", "false"}, {"daso.B_max", "3"}, {"daso.S", "0"}});
  check_epoch(run, 7, 1, false, {sync(0, 0, 0, 0), sync(3, 3, 1, 0), sync(6, 6, 0, 0)});
}

// Warm-up: blocking bf16 syncs after every batch, f32 accumulation, plain average.
TEST(Daso, WarmupSyncsEveryBatchInBf16) {
  DasoRun run({{"daso.warmup_epochs", "1"}, {"daso.cooldown_epochs", "0"}});
  run.strategy->take_stats();
  // Warm-up: a blocking sync after every batch, groups 0, 1, 0.
  check_epoch(run, 3, 3, true, {sync(0, 0, 0, 0), sync(1, 1, 1, 0), sync(2, 2, 0, 0)});
  EXPECT_EQ(run.strategy->state().at("phase"), 0);
  EXPECT_EQ(run.strategy->state().at("global_syncs"), 3);
  // Groups 0, 1, 0 synced: local rank 0 sent two bf16 arenas, local rank 1 one.
  const CommStats s = run.strategy->take_stats();
  const int64_t n = run.rep->arena->numel();
  const int mine = run.strategy->topology().local_rank() == 0 ? 2 : 1;
  const auto buckets = static_cast<int64_t>(run.strategy->local_sync().buckets().size());
  EXPECT_EQ(s.allreduces, 3 * buckets + mine);
  // Bytes (every participant counts the payload, comm/meter.h): 3 local gradient allreduces
  // (f32) + bf16 parameter sends + the 3 node broadcasts (f32), as root or not.
  double grad_bytes = 0;
  for (const GradBucket& b : run.strategy->local_sync().buckets()) grad_bytes += b.numel() * 4.0;
  EXPECT_DOUBLE_EQ(s.bytes_sent, 3.0 * grad_bytes + mine * n * 2.0 + 3.0 * n * 4.0);
}

// The whole loop over warm-up, cycling and cool-down epochs: all ranks bitwise equal after
// every epoch, per-epoch state and counts as the schedule says.
TEST(Daso, AllRanksBitwiseEqualAfterEveryEpoch) {
  DasoRun run({{"daso.warmup_epochs", "1"},
               {"daso.cooldown_epochs", "1"},
               {"daso.B_max", "2"},
               {"daso.S", "1"}});
  const int64_t E = 4, T = 5;
  const auto buckets = static_cast<int64_t>(run.strategy->local_sync().buckets().size());
  run.strategy->take_stats();
  int64_t global_step = 0;
  for (int64_t e = 0; e < E; ++e) {
    run.strategy->begin_epoch(e);
    double loss_sum = 0;
    for (int64_t t = 0; t < T; ++t) {
      StepInfo info;
      info.epoch = e;
      info.step_in_epoch = t;
      info.global_step = global_step++;
      info.steps_per_epoch = T;
      info.total_epochs = E;
      run.step_until_after_step(info);
      run.strategy->after_step(info);
      loss_sum += 1.0;
    }
    run.strategy->end_epoch(e, loss_sum / T + run.R);  // rank-dependent: world mean is used
    run.strategy->drain();
    EXPECT_TRUE(run.bitwise_equal_everywhere()) << "epoch " << e;
    const auto st = run.strategy->state();
    const bool cycling = e >= 1 && e < E - 1;
    EXPECT_EQ(st.at("phase"), cycling ? 1 : (e == 0 ? 0 : 2)) << e;
    EXPECT_EQ(st.at("B"), cycling ? 2 : 1) << e;
    EXPECT_EQ(st.at("S"), cycling ? 1 : 0) << e;
    // Cycling, T = 5, B = 2: sends after 0 and 2, blocking at 4 -> groups 0, 1, 0.
    const int64_t syncs = cycling ? 3 : T;
    EXPECT_EQ(st.at("global_syncs"), syncs) << e;
    EXPECT_DOUBLE_EQ(st.at("world_loss"), 1.0 + 3.5) << e;
    // This rank's global syncs, by hand: groups 0, 1, 0 while cycling, 0, 1, 0, 1, 0 in the
    // blocking phases (one sync per batch).
    const bool first = run.strategy->topology().local_rank() == 0;
    const int64_t mine = cycling ? (first ? 2 : 1) : (first ? 3 : 2);
    const CommStats cs = run.strategy->take_stats();
    // T node-local gradient bucket allreduces, this rank's global syncs, the loss average.
    EXPECT_EQ(cs.allreduces, T * buckets + mine + 1) << e;
  }
}

// The node-local gradient average, numerically: each rank's gradient after after_backward must
// be the mean over the ranks of its own node (4 nodes x 2 here), not over the world. The
// reference: every rank computes its own gradient on a hook-free copy of the model (same
// parameters, its own batch), all of them are gathered, and the node means are formed serially
// in double. Ranks of a node see different batches, so a world average differs by far more than
// the tolerance.
TEST(Daso, NodeLocalGradientIsTheMeanOverTheNode) {
  DasoRun run({});
  ASSERT_GT(run.P, 1) << "needs more than one node";
  Communicator& world = run.strategy->topology().world();
  StepInfo info;
  info.epoch = 0;
  info.step_in_epoch = 0;
  info.global_step = 0;
  info.steps_per_epoch = 5;
  info.total_epochs = 3;
  run.strategy->begin_epoch(0);
  // This rank's own gradient, without DASO: a second replica holding the broadcast parameters.
  Replica plain(1);
  Tensor plain_params = plain.arena->params();  // a handle on the arena (copy_ is non-const)
  plain_params.copy_(run.rep->arena->params());
  Tensor x, y;
  rank_batch(0, run.R, x, y);
  plain.sgd->zero_grad();
  backward(cross_entropy(plain.model->forward(x), y));
  const States own = gather(world, plain.arena->grads());
  Tensor node_t = Tensor::full({1}, float(run.strategy->topology().node_id()));
  Tensor nodes = Tensor::empty({run.W});
  world.allgather(node_t, nodes);
  const auto node_of = nodes.to_vector();
  // Serial node mean and world mean of this rank's node.
  const size_t n = own[0].size();
  std::vector<double> node_mean(n, 0.0), world_mean(n, 0.0);
  int members = 0;
  for (int r = 0; r < run.W; ++r) {
    const bool same = node_of[size_t(r)] == node_of[size_t(run.R)];
    members += same;
    for (size_t i = 0; i < n; ++i) {
      if (same) node_mean[i] += own[size_t(r)][i];
      world_mean[i] += own[size_t(r)][i] / run.W;
    }
  }
  ASSERT_EQ(members, run.G);
  for (double& v : node_mean) v /= members;
  // DASO's step up to the optimizer: the node-local GradSync runs in backward/after_backward.
  const StepPlan plan = run.strategy->plan(info);
  if (plan.zero_grad) run.rep->sgd->zero_grad();
  run.strategy->before_forward(info);
  backward(cross_entropy(run.rep->model->forward(x), y));
  run.strategy->after_backward(info);
  const auto g = run.rep->arena->grads().to_vector();
  std::vector<double> gd(g.begin(), g.end());
  double scale = 0;
  for (double v : node_mean) scale = std::max(scale, std::fabs(v));
  EXPECT_LT(max_abs_diff(gd, node_mean), 1e-5 * scale) << "rank " << run.R;
  EXPECT_GT(max_abs_diff(node_mean, world_mean), 1e-2 * scale) << "node and world means coincide";
  if (plan.optimizer_step) run.rep->sgd->step();
  run.strategy->after_step(info);
  run.strategy->drain();
}

}  // namespace
}  // namespace dplab
