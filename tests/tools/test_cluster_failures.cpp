// `dplab train --cluster` with fail events (issue #36 item 2; docs/virtual_cluster.md,
// "Failures"): a synchronous algorithm stops at the step the arithmetic gives; the algorithms that
// go on (allreduce with allreduce.ft = quorum, local SGD, DiLoCo, Streaming DiLoCo, SlowMo, SGP,
// flat Crossover) average over the live ranks only, each checked against a serial computation
// with the failed rank's contributions removed: the ranks' own results taken alone (local SGD
// whose round outlasts the run) from the same start on the same shards. Times are the arithmetic
// of the test platform's round numbers (cluster_scenario.h).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster_scenario.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "dplab/train/loop/trainer.h"
#include "run_cli.h"

namespace dplab {
namespace {

using namespace cluster_test;  // the test platform, profile and runs (cluster_scenario.h)

// A fail event: `rank` down for global steps first..last.
std::string fail_steps(int rank, int first, int last) {
  return fmt::format("[[event]]\nkind = \"fail\"\nranks = [{}]\nsteps = [{}, {}]\n", rank, first,
                     last);
}

// A checkpoint's parameters (f32 tensors, the optimizer's and the algorithm's left out) of rank
// `rank` at `step`.
using Params = std::map<std::string, std::vector<float>>;
Params checkpoint_params(const fs::path& run, int64_t step, int rank) {
  Params m;
  const fs::path f = run / "checkpoints" / fmt::format("step_{:08d}", step) /
                     fmt::format("rank_{}.safetensors", rank);
  for (const NamedTensor& t : load_safetensors(f.string()))
    if (t.tensor.dtype() == DType::f32 && !t.name.starts_with("optim.") &&
        !t.name.starts_with("algo."))
      m[t.name] = t.tensor.to_vector();
  return m;
}

// The final model of a run (final.safetensors: the run's model, PyTorch names) under the
// checkpoints' names ("model." + the PyTorch name), f32 tensors.
Params final_params(const fs::path& run) {
  Params m;
  for (const NamedTensor& t : load_safetensors((run / "final.safetensors").string()))
    if (t.tensor.dtype() == DType::f32) m["model." + t.name] = t.tensor.to_vector();
  return m;
}

// A failure scenario's set-up, shared by the tests: a temporary directory with the round-number
// compute profile (every tensor ready at backward's end), the test platform with one rank per
// node (lab.toml) and with two (lab2.toml), and the fail events `events` (TOML, events.toml).
struct FailScenario {
  ScopedTempDir dir;
  double n = 0;  // bytes of the one gradient bucket
  std::string profile;

  FailScenario(const std::string& name, const std::string& events) : dir(name) {
    profile = write_profile(dir, 1.0, &n);
    std::ofstream(dir.file("lab.toml")) << platform_toml(1);
    std::ofstream(dir.file("lab2.toml")) << platform_toml(2);
    std::ofstream(dir.file("events.toml")) << events;
  }
  // The options that apply the fail events with the down ranks' samples dropped: the serial
  // checks below remove a failed rank's contributions, its samples included (the samples
  // reassigned to the live ranks, the default, have tests of their own).
  std::string events() const { return reassigned_events() + " --set cluster.failure_data=drop"; }
  // The fail events under the default cluster.failure_data = reassign.
  std::string reassigned_events() const {
    return " --set cluster.events=" + dir.file("events.toml");
  }
  // The serial checks' run: `epochs` of 512 images (8 steps of 16 on 4 ranks) cut at
  // `max_steps`, on the platform with `ranks_per_node`, profile compute.
  std::string common(int max_steps, int ranks_per_node = 1, int epochs = 1) const {
    return fmt::format(
        "--epochs {} --set data.train_limit=512 --set max_steps={} --cluster {} --set "
        "cluster.compute=profile:{}",
        epochs, max_steps, dir.file(ranks_per_node == 1 ? "lab.toml" : "lab2.toml"), profile);
  }
  // `dplab train` on `ranks` ranks with `args`, into dir/run (exit status 0 expected).
  Records train(int ranks, const std::string& args, const std::string& run) const {
    return cluster_test::train(ranks, args, dir, run);
  }
  // metrics.jsonl's records of `kind` of dir/run.
  std::vector<nlohmann::json> records(const std::string& run, const std::string& kind) const {
    return read_jsonl(dir.path / run / "metrics.jsonl", kind);
  }
  // Rank `rank`'s parameters in dir/run's checkpoint at `step`.
  Params params(const std::string& run, int64_t step, int rank) const {
    return checkpoint_params(dir.path / run, step, rank);
  }
  // Every rank's of 4.
  std::vector<Params> each(const std::string& run, int64_t step) const {
    std::vector<Params> v;
    for (int r = 0; r < 4; ++r) v.push_back(params(run, step, r));
    return v;
  }
};

// The largest |got - the mean of ranks 0..2 of `each`| and |got - the mean of all four|.
std::pair<double, double> distance_to_means(const Params& got, const std::vector<Params>& each) {
  EXPECT_FALSE(got.empty());
  double worst_live = 0, worst_all = 0;
  for (const auto& [name, q] : got) {
    EXPECT_EQ(each[0].count(name), 1u) << name;
    if (!each[0].count(name)) continue;
    for (size_t i = 0; i < q.size(); ++i) {
      const double live =
          (double(each[0].at(name)[i]) + each[1].at(name)[i] + each[2].at(name)[i]) / 3;
      const double all = (3 * live + each[3].at(name)[i]) / 4;
      worst_live = std::max(worst_live, std::abs(q[i] - live));
      worst_all = std::max(worst_all, std::abs(q[i] - all));
    }
  }
  return {worst_live, worst_all};
}

// The largest |got - want| over want's tensors.
double max_distance(const Params& got, const Params& want) {
  double worst = 0;
  for (const auto& [name, v] : want) {
    EXPECT_EQ(got.count(name), 1u) << name;
    if (!got.count(name)) continue;
    for (size_t i = 0; i < v.size(); ++i)
      worst = std::max(worst, std::abs(double(got.at(name)[i]) - v[i]));
  }
  return worst;
}

// The element-wise mean of `xs`, in double, rounded to float.
Params mean_of(const std::vector<const Params*>& xs) {
  Params out;
  for (const auto& [name, v] : *xs[0]) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      double m = 0;
      for (const Params* x : xs) m += x->at(name)[i];
      o[i] = float(m / double(xs.size()));
    }
    out[name] = o;
  }
  return out;
}

// SlowMo's slow step with alpha = 0.5 (beta does not enter: u_0 = 0): x_0 + alpha (xbar - x_0),
// xbar the mean of `xs`.
Params slow_step(const Params& x0, const std::vector<const Params*>& xs) {
  const Params xbar = mean_of(xs);
  Params out;
  for (const auto& [name, v] : x0) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      o[i] = float(v[i] + 0.5 * (double(xbar.at(name)[i]) - v[i]));
    out[name] = o;
  }
  return out;
}

// Issue #36 item 2: a fail event on rank 1 under a synchronous algorithm (allreduce) stops the
// job. Profile compute, every tensor ready at backward's end, 256 images over 2 ranks in batches
// of 16 (8 steps): both ranks' clocks read b + s S at step s's start, S = F + B + c + C + O, where
// b = alpha + n / B is the set-up's broadcast of rank 0's parameters (the arena, n bytes, one
// transfer between the 2 nodes). Rank 1 is down from b + 5.5 S: step 5 begins at b + 5 S,
// before it, step 6 at b + 6 S, inside it, so every rank stops at global step 6, after the
// checkpoint the policy wrote at step 5 (checkpoint.every_steps = 5), which the message names as
// the one a restart resumes from.
TEST(ClusterTrain, FailEventStopsASynchronousAlgorithmAtItsStep) {
  const FailScenario sc("cluster-train-fail", "");  // the event below, from the bucket's bytes
  const double S = kF + kB + kC + kO + ring_allreduce(2, kNetAlpha, kNetRate, sc.n);
  const double b = kNetAlpha + sc.n / kNetRate;
  std::ofstream(sc.dir.file("events.toml")) << fmt::format(
      "[[event]]\nkind = \"fail\"\nranks = [1]\nfrom_s = {:.17g}\nfor_s = 60\n", b + 5.5 * S);
  const fs::path out = sc.dir.path / "run";
  const auto r = test::run_dplab_mpi(
      2,
      train_command(out,
                    "--algo allreduce --epochs 1 --set data.train_limit=256 --set "
                    "checkpoint.every_steps=5 --cluster " +
                        sc.dir.file("lab.toml") + " --set cluster.compute=profile:" + sc.profile +
                        sc.events()),
      sc.dir.path / "log");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const std::string ckpt = (out / "checkpoints" / "step_00000005").string();
  EXPECT_NE(r.err.find(fmt::format("rank 1 failed at {:g} s of virtual time", b + 5.5 * S)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(fmt::format("global step 6 begins at {:.6g} s of virtual time without it",
                                   b + 6 * S)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("algorithm 'allreduce' cannot go on without a rank"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("a restart resumes from the last checkpoint the policy wrote, " + ckpt +
                       " (global step 5)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(fs::path(ckpt) / "manifest.json"));
  const auto stopped = read_jsonl(out / "metrics.jsonl", "stopped");
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0]["reason"], "failure");
  EXPECT_EQ(stopped[0]["step"], 6);
  EXPECT_EQ(stopped[0]["ranks"], nlohmann::json::array({1}));
  EXPECT_NEAR(stopped[0]["virtual_time_s"].get<double>(), b + 6 * S, 1e-9);
  // Lost: the training since the checkpoint's state, step 5's start to step 6's: S.
  EXPECT_NEAR(stopped[0]["lost_s"].get<double>(), S, 1e-9);
  EXPECT_EQ(stopped[0]["checkpoint"], ckpt);
  EXPECT_TRUE(read_jsonl(out / "metrics.jsonl", "final").empty());
}

// Issue #36 item 2: allreduce.ft = quorum goes on with the live ranks, and heals a returning rank
// from a live peer. 4 ranks on 4 nodes, 512 images in batches of 16: 8 steps. Rank 3 is down for
// steps 2 and 3 and back at step 4. The liveness records say so at steps 2 and 4; at step 4
// rank 0 (the lowest rank live at step 3 and at step 4) sends rank 3 its state, one message per
// tensor: the parameter arena (A bytes: every tensor in a slot of a multiple of 16 floats), SGD's
// momentum buffer (A bytes) and its step counter (8 bytes). Rank 0 posts at T, the world's clock
// (the live ranks' clocks agree after the allreduce; rank 3's is behind, its compute not
// charged): the three messages leave back to back, the last byte arrives at
// T + (2 A + 8) / rate and is received a latency later, so the world's clock moves by
// alpha + (2 A + 8) / rate.
TEST(ClusterTrain, QuorumAllreduceGoesOnWithTheLiveRanksAndHealsTheReturningOne) {
  const FailScenario sc("cluster-train-quorum", fail_steps(3, 2, 3));
  const double A = arena_bytes(sc.profile);
  const Records rec = sc.train(4,
                               "--algo allreduce --set allreduce.ft=quorum --epochs 1 --set "
                               "data.train_limit=512 --trace --cluster " +
                                   sc.dir.file("lab.toml") +
                                   " --set cluster.compute=profile:" + sc.profile + sc.events(),
                               "quorum");
  const auto live = sc.records("quorum", "liveness");
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0]["step"], 2);
  EXPECT_EQ(live[0]["live_ranks"], 3);
  EXPECT_EQ(live[0]["down"], nlohmann::json::array({3}));
  EXPECT_EQ(live[0]["returned"], nlohmann::json::array());
  EXPECT_FALSE(live[0].contains("heal_s"));
  EXPECT_EQ(live[1]["step"], 4);
  EXPECT_EQ(live[1]["live_ranks"], 4);
  EXPECT_EQ(live[1]["down"], nlohmann::json::array());
  EXPECT_EQ(live[1]["returned"], nlohmann::json::array({3}));
  EXPECT_EQ(live[1]["heal_from"], 0);
  EXPECT_EQ(live[1]["heal_bytes"].get<double>(), 2 * A + 8);
  const double heal = kNetAlpha + (2 * A + 8) / kNetRate;
  EXPECT_NEAR(live[1]["heal_s"].get<double>(), heal, 1e-9 * heal);
  // The final record: rank 3 was down for steps 2 and 3, each F + B + C + O plus the live ranks'
  // ring allreduce over the 4 nodes; the recovery is the heal.
  ASSERT_FALSE(sc.records("quorum", "final").empty());
  const auto fin = sc.records("quorum", "final")[0];
  const double S4 = kF + kB + kC + kO + ring_allreduce(4, kNetAlpha, kNetRate, sc.n);
  EXPECT_NEAR(fin["failure_lost_rank_s"].get<double>(), 2 * S4, 1e-9);
  EXPECT_NEAR(fin["recovery_s"].get<double>(), heal, 1e-9 * heal);
  ASSERT_EQ(rec.epochs.size(), 1u);
  // Rank 3 saw no batch of steps 2 and 3: 8 x 16 x 4 - 2 x 16 images in the epoch's loss.
  ASSERT_EQ(rec.rank_epochs.size(), 4u);
  EXPECT_EQ(rec.rank_epochs[3][0]["images"], 6 * 16);
  EXPECT_EQ(rec.rank_epochs[0][0]["images"], 8 * 16);
  // The transfer is traced (dplab trace shows it): the heal messages' events.
  std::ifstream trace(sc.dir.path / "quorum" / "trace.json");
  const std::string text((std::istreambuf_iterator<char>(trace)), {});
  EXPECT_NE(text.find("\"name\":\"heal\""), std::string::npos);
  // The steps' events name their live ranks: 3 while rank 3 is down, 4 otherwise.
  EXPECT_NE(text.find("\"live_ranks\":3"), std::string::npos);
  EXPECT_NE(text.find("\"live_ranks\":4"), std::string::npos);
}

// Issue #36 item 2, the data policy (cluster.failure_data = reassign, the default): the scenario
// above, rank 3 down for steps 2 and 3. At each of those steps rank 3's 16 samples go to the 3
// live ranks, 5, 5 and 6 of them (train/virtual/failure_data.h), so ranks 0 and 1 see 8 x 16 + 2 x
// 5 images in the epoch, rank 2 8 x 16 + 2 x 6, rank 3 6 x 16: 512 in all, every sample of the
// epoch, against 512 - 2 x 16 when they are dropped (the test above). The live ranks' forward and
// backward grow with their batch (the profile's times x 21/16 or 22/16), so each of the two steps
// lasts (F + B) x 22/16 + C + O plus the ring allreduce, which the lost rank-seconds count.
TEST(ClusterTrain, ReassignedSamplesAreTheDownRanksAndLengthenTheLiveRanksSteps) {
  const FailScenario sc("cluster-train-reassign", fail_steps(3, 2, 3));
  const Records rec =
      sc.train(4,
               "--algo allreduce --set allreduce.ft=quorum --epochs 1 --set "
               "data.train_limit=512 --cluster " +
                   sc.dir.file("lab.toml") + " --set cluster.compute=profile:" + sc.profile +
                   sc.reassigned_events(),
               "reassign");
  ASSERT_EQ(rec.rank_epochs.size(), 4u);
  EXPECT_EQ(rec.rank_epochs[0][0]["images"], 8 * 16 + 2 * 5);
  EXPECT_EQ(rec.rank_epochs[1][0]["images"], 8 * 16 + 2 * 5);
  EXPECT_EQ(rec.rank_epochs[2][0]["images"], 8 * 16 + 2 * 6);
  EXPECT_EQ(rec.rank_epochs[3][0]["images"], 6 * 16);
  const auto live = sc.records("reassign", "liveness");
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0]["data"], "reassign");
  const auto fin = sc.records("reassign", "final");
  ASSERT_EQ(fin.size(), 1u);
  const double S = (kF + kB) * 22 / 16 + kC + kO + ring_allreduce(4, kNetAlpha, kNetRate, sc.n);
  EXPECT_NEAR(fin[0]["failure_lost_rank_s"].get<double>(), 2 * S, 1e-9);
}

// The reassigned samples' arithmetic: allreduce with a quorum averages the live ranks'
// gradients, each the mean over its batch. Per-rank batch 12 on 4 ranks, rank 3 down for steps
// 1 and 2: the 3 live ranks take 4 of its samples each, so each step's average is
// (1/3) sum over the live ranks of the mean over 16 samples = the mean over the same 48 samples
// a run without the failure averages (disjoint, equal parts). After 4 steps the model must be
// that run's, up to the summation order: a few f32 roundings of gradients of order 1 per step,
// times lr 0.05 over 4 steps, well under 1e-5. Dropping the samples instead averages over 36 of
// them and moves the model by far more.
TEST(ClusterTrain, QuorumWithReassignedSamplesAveragesTheWholeGlobalBatch) {
  const FailScenario sc("cluster-train-reassign-serial", fail_steps(3, 1, 2));
  const std::string run =
      "--algo allreduce --set allreduce.ft=quorum --epochs 1 --set "
      "data.train_limit=480 --set max_steps=4 --cluster " +
      sc.dir.file("lab.toml");
  cluster_test::train(4, run + sc.reassigned_events(), sc.dir, "reassign", 12);
  cluster_test::train(4, run + sc.events(), sc.dir, "drop", 12);
  cluster_test::train(4, run, sc.dir, "whole", 12);
  const auto whole = sc.params("whole", 4, 0);
  const double reassigned = max_distance(sc.params("reassign", 4, 0), whole);
  const double dropped = max_distance(sc.params("drop", 4, 0), whole);
  fmt::print("max |theta - theta_whole| after 4 steps: reassigned {:.3g}, dropped {:.3g}\n",
             reassigned, dropped);
  EXPECT_LT(reassigned, 1e-5);
  EXPECT_GT(dropped, 1e-4);
  EXPECT_EQ(sc.params("reassign", 4, 3), sc.params("reassign", 4, 0));  // rank 3 healed
}

// A run with fail events resumed from a checkpoint taken while a rank was down (issue #36 item 2
// with resume): rank 3 down for steps 2..5 of 8, a checkpoint at step 4, the run stopped at 5
// and resumed from step 4. The resumed run knows rank 3 is down (no second failure record at
// step 4), heals it at step 6, ends with the uninterrupted run's model (resume is exact), and its
// final record's time lost and recovery are the uninterrupted run's: the figures so far and the
// virtual clock carry over (the clock goes on from the checkpoint's reading).
TEST(ClusterTrain, ResumedFailureRunCarriesItsDownRanksAndFigures) {
  const FailScenario sc("cluster-train-failure-resume", fail_steps(3, 2, 5));
  const std::string run =
      "--algo allreduce --set allreduce.ft=quorum --epochs 1 --set "
      "data.train_limit=512 --cluster " +
      sc.dir.file("lab.toml") + " --set cluster.compute=profile:" + sc.profile +
      sc.reassigned_events();
  sc.train(4, run, "straight");
  sc.train(4, run + " --set checkpoint.every_steps=4 --max-steps 5", "part");
  sc.train(4, run + " --resume " + sc.dir.file("part/checkpoints/step_00000004"), "resumed");
  const auto live = sc.records("resumed", "liveness");
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0]["step"], 6);
  EXPECT_EQ(live[0]["returned"], nlohmann::json::array({3}));
  EXPECT_EQ(live[0]["heal_from"], 0);
  const auto want = sc.records("straight", "final");
  const auto got = sc.records("resumed", "final");
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  const double lost = want[0]["failure_lost_rank_s"].get<double>();
  EXPECT_GT(lost, 0);
  EXPECT_NEAR(got[0]["failure_lost_rank_s"].get<double>(), lost, 1e-9 * lost);
  EXPECT_NEAR(got[0]["recovery_s"].get<double>(), want[0]["recovery_s"].get<double>(), 1e-12);
  EXPECT_GT(got[0]["recovery_s"].get<double>(), 0);
  EXPECT_EQ(sc.params("resumed", 8, 0), sc.params("straight", 8, 0));
  EXPECT_EQ(sc.params("resumed", 8, 3), sc.params("straight", 8, 0));
}

// The run's failure figures beyond the final record: run.json holds the final record's
// failure_lost_rank_s and recovery_s, and the summary printed at the end says them, each with what
// it is. The scenario of the test above, cut at 6 steps: rank 3 down for steps 2 and 3 (each
// F + B + C + O plus the live ranks' ring allreduce over the 4 nodes) and healed at step 4.
TEST(ClusterTrain, FailureFiguresReachRunJsonAndTheSummary) {
  const FailScenario sc("cluster-train-failure-report", fail_steps(3, 2, 3));
  const Records rec = sc.train(
      4, "--algo allreduce --set allreduce.ft=quorum " + sc.common(6) + sc.events(), "quorum");
  const auto fin = sc.records("quorum", "final");
  ASSERT_EQ(fin.size(), 1u);
  const double lost = fin[0]["failure_lost_rank_s"].get<double>();
  const double recovery = fin[0]["recovery_s"].get<double>();
  const double S4 = kF + kB + kC + kO + ring_allreduce(4, kNetAlpha, kNetRate, sc.n);
  const double heal = kNetAlpha + (2 * arena_bytes(sc.profile) + 8) / kNetRate;
  EXPECT_NEAR(lost, 2 * S4, 1e-9);
  EXPECT_NEAR(recovery, heal, 1e-9 * heal);
  ASSERT_TRUE(rec.run.contains("failure_lost_rank_s")) << rec.run.dump();
  ASSERT_TRUE(rec.run.contains("recovery_s")) << rec.run.dump();
  EXPECT_EQ(rec.run["failure_lost_rank_s"].get<double>(), lost);
  EXPECT_EQ(rec.run["recovery_s"].get<double>(), recovery);
  EXPECT_NE(rec.out.find(fmt::format(
                "failures: {:.4g} rank-s of virtual time lost (the ranks down x each step's "
                "virtual time, summed over ranks), recovery {:.4g} s virtual (how far the heals "
                "of returning ranks moved the world's clock: 0 when a heal ends before the live "
                "ranks' step does)\n",
                lost, recovery)),
            std::string::npos)
      << rec.out;
}

// Issue #36 item 2, the quorum's arithmetic against a serial computation: one step of 4 ranks
// (max_steps = 1) with rank 3 down. Local SGD with a period longer than the run takes that step
// on each rank alone, from the same start (rank 0's parameters) on the same shard, and its
// checkpoint at the stop holds each rank's own result theta_r (written before the final
// average). SGD's first step is linear in the gradient (the momentum buffer is the gradient), so
// the quorum's step, the gradient averaged over ranks 0..2, must give the mean of their theta_r,
// computed here, and not the mean over all four ranks.
TEST(ClusterTrain, QuorumStepIsTheMeanOfTheLiveRanksOwnSteps) {
  const FailScenario sc("cluster-train-quorum-serial", fail_steps(3, 0, 0));
  sc.train(4, "--algo allreduce --set allreduce.ft=quorum " + sc.common(1) + sc.events(), "quorum");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(1), "alone");
  const auto quorum = sc.params("quorum", 1, 0);
  const auto [worst_live, worst_all] = distance_to_means(quorum, sc.each("alone", 1));
  EXPECT_LT(worst_live, 1e-6);
  EXPECT_GT(worst_all, 1e-4);  // rank 3's contribution is really removed
  // Every rank of the quorum run holds the same model (rank 3 applied the live ranks' update).
  EXPECT_EQ(sc.params("quorum", 1, 3), quorum);
}

// Issue #36 item 2, local SGD (the periodic family) against a serial computation: 4 ranks,
// H = 2, rank 3 down for steps 0 and 1 (the whole first round), 2 steps. The round's average is
// over ranks 0..2: it must equal the mean of their own 2-step results, taken alone (H longer
// than the run: the checkpoint at the stop holds each rank's own parameters), and rank 3 must
// hold it too (it takes part in the average with weight 0).
TEST(ClusterTrain, LocalSgdAveragesTheLiveRanksOnly) {
  const FailScenario sc("cluster-train-local-sgd-fail", fail_steps(3, 0, 1));
  const Records rec =
      sc.train(4, "--algo local_sgd --set local_sgd.H=2 " + sc.common(2) + sc.events(), "failed");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(2), "alone");
  const Params failed = sc.params("failed", 2, 0);
  const auto [worst_live, worst_all] = distance_to_means(failed, sc.each("alone", 2));
  EXPECT_LT(worst_live, 1e-6);
  EXPECT_GT(worst_all, 1e-4);
  EXPECT_EQ(sc.params("failed", 2, 3), failed);
  const auto live = sc.records("failed", "liveness");
  ASSERT_EQ(live.size(), 1u);  // down from step 0; the run ends before it returns
  EXPECT_EQ(live[0]["live_ranks"], 3);
  ASSERT_EQ(rec.rank_epochs.size(), 4u);
  ASSERT_EQ(rec.rank_epochs[3].size(), 1u);
  EXPECT_EQ(rec.rank_epochs[3][0]["images"], 0);
}

// The heal sends the algorithm's tensors too (train/virtual/heal.h): DiLoCo (H = 2, Nesterov outer
// momentum), rank 3 down for the first round and back at step 2. Rank 0 sends it the parameters
// (the arena, A bytes), the inner SGD's momentum buffer and step (A + 8, as allreduce's heal
// above), and DiLoCo's global model theta and outer momentum (A each): 4 A + 8 bytes, one
// transfer between two nodes, latency + bytes / rate (2 A + 8 before the algorithm's tensors
// were sent).
TEST(ClusterTrain, HealSendsTheAlgorithmsTensors) {
  const FailScenario sc("cluster-train-diloco-heal", fail_steps(3, 0, 1));
  sc.train(4, "--algo diloco --set diloco.H=2 " + sc.common(3) + sc.events(), "healed");
  const double A = arena_bytes(sc.profile);
  const auto live = sc.records("healed", "liveness");
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[1]["step"], 2);
  EXPECT_EQ(live[1]["returned"], nlohmann::json::array({3}));
  EXPECT_EQ(live[1]["heal_bytes"].get<double>(), 4 * A + 8);
  const double heal = kNetAlpha + (4 * A + 8) / kNetRate;
  EXPECT_NEAR(live[1]["heal_s"].get<double>(), heal, 1e-9 * heal);
}

// DiLoCo against a serial computation: as above, with the outer optimizer plain SGD at lr 1, so
// that the outer step theta(1) = theta(0) - Delta, Delta the mean of the live workers'
// theta(0) - theta_i, is the mean of their theta_i: the live ranks' own 2-step results, taken
// alone (H longer than the run; the checkpoint at the stop holds them before the last round).
TEST(ClusterTrain, DiLoCoOuterGradientIsTheLiveWorkersMean) {
  const FailScenario sc("cluster-train-diloco-fail", fail_steps(3, 0, 1));
  const std::string diloco =
      "--algo diloco --set diloco.outer_optim=sgd --set diloco.outer_momentum=0 --set "
      "diloco.outer_lr=1 " +
      sc.common(2);
  sc.train(4, diloco + " --set diloco.H=2" + sc.events(), "failed");
  sc.train(4, diloco + " --set diloco.H=100", "alone");
  const Params failed = sc.params("failed", 2, 0);
  const auto [worst_live, worst_all] = distance_to_means(failed, sc.each("alone", 2));
  EXPECT_LT(worst_live, 1e-6);
  EXPECT_GT(worst_all, 1e-4);
  EXPECT_EQ(sc.params("failed", 2, 3), failed);
}

// Streaming DiLoCo against a serial computation: 2 fragments, H = 2, tau = 0, alpha = 0 (a
// fragment's local part becomes the global one), outer SGD at lr 1 without momentum, so that a
// fragment's outer step gives the mean of the live replicas' fragment. One step (max_steps = 1),
// rank 3 down: fragment 0 is sent after inner step 1 (o_0 = H / P = 1), averaged over ranks 0..2
// and applied; the end of training's full sync sends both fragments, fragment 0's outer gradient
// now 0 (theta_i = theta_g) and fragment 1's the live replicas' theta_g - theta_i(1). So the final
// model theta_g is, on every fragment, the mean of ranks 0..2's own one-step results taken alone.
// Then with the int8 exchange (the weighting before the quantisation): the same mean to within the
// quantisation's rounding, which is far below what rank 3 would add.
TEST(ClusterTrain, StreamingDiLoCoFragmentsAreTheLiveReplicasMean) {
  const FailScenario sc("cluster-train-streaming-fail", fail_steps(3, 0, 0));
  const std::string streaming =
      "--algo streaming_diloco --set streaming_diloco.H=2 --set streaming_diloco.fragments=2 "
      "--set streaming_diloco.fragment_sync_delay=0 --set streaming_diloco.fragment_update_alpha=0 "
      "--set streaming_diloco.outer_lr=1 --set streaming_diloco.outer_momentum=0 " +
      sc.common(1) + sc.events();
  sc.train(4, streaming, "failed");
  sc.train(4, streaming + " --set streaming_diloco.quantize=int8", "int8");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(1), "alone");
  const std::vector<Params> alone = sc.each("alone", 1);
  const auto [worst_live, worst_all] =
      distance_to_means(final_params(sc.dir.path / "failed"), alone);
  EXPECT_LT(worst_live, 1e-6);
  EXPECT_GT(worst_all, 1e-4);
  const auto [q_live, q_all] = distance_to_means(final_params(sc.dir.path / "int8"), alone);
  std::cout << "int8: |got - live mean| <= " << q_live << ", |got - all mean| <= " << q_all << "\n";
  EXPECT_LT(q_live, worst_all / 4);
  EXPECT_GT(q_all, worst_all / 2);
}

// SlowMo (local SGD base) against a serial computation. 4 ranks, tau = 2, no averaging inside a
// round (localsgd_frequency = 0), rank 3 down for steps 0 and 1, 2 steps. The round's slow step
// is u_1 = (x_0 - xbar) / gamma, x_{1,0} = x_0 - alpha gamma u_1 = x_0 + alpha (xbar - x_0) (beta
// does not enter: u_0 = 0), xbar the live workers' average; alpha = 0.5. x_0 is read from a run
// with alpha = 0 (then x_{1,0} = x_0).
//  a. One rank per node (every rank a worker): xbar is the mean of ranks 0..2's own 2-step
//     results, taken alone.
//  b. Two ranks per node (node workers: a node's ranks average their gradients each step): node
//     1's worker steps on rank 2's gradients alone, so xbar = (W_0 + rank 2's own result) / 2,
//     W_0 node 0's worker (from a run without failures whose round outlasts the run), and not
//     (W_0 + W_1) / 2. Every rank, rank 3 too, holds x_{1,0}.
//  c. (below)
TEST(ClusterTrain, SlowMoAveragesTheLiveWorkersOnly) {
  const FailScenario sc("cluster-train-slowmo-fail", fail_steps(3, 0, 1));
  const std::string slowmo =
      "--algo slowmo --set slowmo.frequency=2 --set "
      "slowmo.localsgd_frequency=0 --set slowmo.lr=";
  sc.train(4, slowmo + "0.5 " + sc.common(2) + sc.events(), "failed");
  sc.train(4, slowmo + "0.5 " + sc.common(2, 2) + sc.events(), "nodes");
  sc.train(4, slowmo + "0 " + sc.common(2), "start");
  sc.train(4, "--algo slowmo --set slowmo.frequency=100 " + sc.common(2, 2), "node-workers");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(2), "alone");
  const Params x0 = sc.params("start", 2, 0);
  const std::vector<Params> alone = sc.each("alone", 2);
  // a.
  const Params failed = sc.params("failed", 2, 0);
  EXPECT_LT(max_distance(failed, slow_step(x0, {&alone[0], &alone[1], &alone[2]})), 1e-6);
  EXPECT_GT(max_distance(failed, slow_step(x0, {&alone[0], &alone[1], &alone[2], &alone[3]})),
            1e-4);
  EXPECT_EQ(sc.params("failed", 2, 3), failed);
  // b.
  const Params w0 = sc.params("node-workers", 2, 0), w1 = sc.params("node-workers", 2, 2);
  EXPECT_EQ(sc.params("node-workers", 2, 1), w0);  // a node's ranks hold their worker's parameters
  const Params nodes = sc.params("nodes", 2, 0);
  EXPECT_LT(max_distance(nodes, slow_step(x0, {&w0, &alone[2]})), 1e-6);
  EXPECT_GT(max_distance(nodes, slow_step(x0, {&w0, &w1})), 1e-4);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(sc.params("nodes", 2, r), nodes) << "rank " << r;
  // c. Node workers, rank 3 back at step 1: healed from rank 2, its node's live rank, it holds
  // node 1's worker again, and every rank ends the round at the same x_{1,0} (healed from rank
  // 0, it would hold node 0's worker and the two cross groups' averages would differ).
  std::ofstream(sc.dir.file("back.toml")) << fail_steps(3, 0, 0);
  sc.train(4,
           slowmo + "0.5 " + sc.common(2, 2) + " --set cluster.events=" + sc.dir.file("back.toml"),
           "back");
  const Params back = sc.params("back", 2, 0);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(sc.params("back", 2, r), back) << "rank " << r;
  const auto live = sc.records("back", "liveness");
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[1]["returned"], nlohmann::json::array({3}));
}

// SlowMo over SGP (every rank a worker), tau = 1: every step ends a round with the push-sum
// average over the live ranks in place of the gossip. One step, rank 3 down: xbar = the mean of
// ranks 0..2's own one-step results (push-sum weights 1), x_{1,0} = x_0 + alpha (xbar - x_0),
// alpha = 0.5, x_0 from a run with alpha = 0.
TEST(ClusterTrain, SlowMoOverSgpAveragesTheLiveRanksOnly) {
  const FailScenario sc("cluster-train-slowmo-sgp-fail", fail_steps(3, 0, 0));
  const std::string slowmo =
      "--algo slowmo --set slowmo.base=sgp --set slowmo.frequency=1 " + sc.common(1);
  sc.train(4, slowmo + " --set slowmo.lr=0.5" + sc.events(), "failed");
  sc.train(4, slowmo + " --set slowmo.lr=0", "start");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(1), "alone");
  const Params x0 = sc.params("start", 1, 0);
  const std::vector<Params> a = sc.each("alone", 1);
  const Params failed = sc.params("failed", 1, 0);
  EXPECT_LT(max_distance(failed, slow_step(x0, {&a[0], &a[1], &a[2]})), 1e-6);
  EXPECT_GT(max_distance(failed, slow_step(x0, {&a[0], &a[1], &a[2], &a[3]})), 1e-4);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(sc.params("failed", 1, r), failed) << "rank " << r;
}

// Gossip against a serial computation: one step of 4 ranks (max_steps = 1) with rank 3 down, the
// gossip on the graph of ranks 0..2. Each rank's model after it is (a_r + a_src) / 2, a_r the
// ranks' own one-step results taken alone (local SGD, as above; push-sum weights 1), src the
// rank it received from; rank 3 (down) gossips nowhere, and no live rank's model holds its a_3.
//  a. SGP: the directed exponential graph of 3 ranks, round 0: hop 1, rank i receives from
//     i - 1 mod 3 (0 from 2, 1 from 0, 2 from 1); over all four ranks rank 0 would take a_3.
//  b. Crossover (one segment): a derangement of 3 ranks drawn from the shared stream, so a
//     3-cycle, one way or the other: read from the results, it must be a derangement of 0..2.
TEST(ClusterTrain, GossipGoesOnOnTheLiveRanksGraph) {
  const FailScenario sc("cluster-train-gossip-fail", fail_steps(3, 0, 0));
  sc.train(4, "--algo sgp " + sc.common(1) + sc.events(), "sgp");
  sc.train(4, "--algo crossover --set crossover.segments=model " + sc.common(1) + sc.events(),
           "crossover");
  sc.train(4, "--algo local_sgd --set local_sgd.H=100 " + sc.common(1), "alone");
  const std::vector<Params> a = sc.each("alone", 1);
  // a.
  const int sgp_src[3] = {2, 0, 1};
  for (int r = 0; r < 3; ++r)
    EXPECT_LT(max_distance(sc.params("sgp", 1, r), mean_of({&a[r], &a[sgp_src[r]]})), 1e-6)
        << "rank " << r;
  EXPECT_GT(max_distance(sc.params("sgp", 1, 0), mean_of({&a[0], &a[3]})), 1e-4);
  // b.
  std::set<int> sources;
  for (int r = 0; r < 3; ++r) {
    const Params got = sc.params("crossover", 1, r);
    int src = -1;
    for (int j = 0; j < 4; ++j)
      if (j != r && max_distance(got, mean_of({&a[r], &a[j]})) < 1e-6) src = j;
    EXPECT_GE(src, 0) << "rank " << r << " holds no (a_r + a_j) / 2";
    EXPECT_NE(src, 3) << "rank " << r << " took the down rank's model";
    sources.insert(src);
  }
  EXPECT_EQ(sources, (std::set<int>{0, 1, 2}));
}

// An image folder of `n` 8x8 colour images (PPM) in two classes, each image's pixels its own.
void write_image_folder(const fs::path& root, int n) {
  for (int i = 0; i < n; ++i) {
    const fs::path dir = root / fmt::format("c{}", i % 2);
    fs::create_directories(dir);
    std::string px(8 * 8 * 3, '\0');
    for (size_t k = 0; k < px.size(); ++k) px[k] = char((k * size_t(i + 3) + 37 * size_t(i)) % 256);
    std::ofstream(dir / fmt::format("{:03d}.ppm", i), std::ios::binary) << "P6\n8 8\n255\n" << px;
  }
}

// BatchNorm statistics (the model's buffers) under a failure: their average is over the live
// ranks, as the parameters' is. resnet20_cifar (a BatchNorm after every convolution) on 64 8x8
// images, 4 ranks in batches of 4, local SGD with H = 2, rank 3 down for steps 0 and 1, 2 steps
// (the run ends with it down). A down rank still runs its forward passes (its loss weighs 0),
// which move its running statistics on batches that count nowhere. The final model's statistics
// (the drain's buffer average) must be the mean of ranks 0..2's own running_mean and running_var
// after their 2 steps, taken alone (H longer than the run: each rank's checkpoint at the stop,
// written before the drain), and not the mean over all four.
TEST(ClusterTrain, BatchNormStatisticsAreTheLiveRanksMean) {
  const FailScenario sc("cluster-train-batchnorm-fail", fail_steps(3, 0, 1));
  write_image_folder(sc.dir.path / "images", 64);
  auto train_resnet = [&](const std::string& args, const std::string& run) {
    const auto r = test::run_dplab_mpi(
        4,
        fmt::format("train --model resnet20_cifar --data folder:{} --set data.image_size=8 "
                    "--batch 4 --lr 0.05 --threads 1 --set progress=off --out {} --algo "
                    "local_sgd --epochs 1 --set max_steps=2 --cluster {} {}",
                    sc.dir.file("images"), sc.dir.file(run), sc.dir.file("lab.toml"), args),
        sc.dir.path / (run + "-log"));
    EXPECT_EQ(r.status, 0) << r.err;
  };
  train_resnet("--set local_sgd.H=2" + sc.events(), "failed");
  train_resnet("--set local_sgd.H=100", "alone");
  auto statistics = [](Params p) {  // the running statistics only
    std::erase_if(p,
                  [](const auto& kv) { return kv.first.find(".running_") == std::string::npos; });
    return p;
  };
  const Params got = statistics(final_params(sc.dir.path / "failed"));
  // running_mean and running_var of resnet20's 21 BatchNorms: the stem's, 2 in each of 9 blocks,
  // the 2 option-B shortcuts'.
  ASSERT_EQ(got.size(), 2u * 21);
  std::vector<Params> alone;
  for (const Params& p : sc.each("alone", 2)) alone.push_back(statistics(p));
  const auto [worst_live, worst_all] = distance_to_means(got, alone);
  std::cout << "running statistics: |got - live mean| <= " << worst_live
            << ", |got - all mean| <= " << worst_all << "\n";
  // The drain weights each live rank's statistics by W / L = 4/3 (an f32 rounding), sums 4 terms
  // and divides by 4 (a few more): a handful of f32 roundings of values of order 1 (2 steps of
  // momentum 0.1 from mean 0 and variance 1), each at most 6e-8 relative, so well under 1e-5 on
  // any x86 CPU; leaving rank 3 in moves them by more than 1e-4 (the second check), so the bound
  // separates the two.
  EXPECT_LT(worst_live, 1e-5);
  EXPECT_GT(worst_all, 1e-4);  // rank 3's statistics are really left out
}

// The test loss of the model `params` (checkpoint names; each tensor's shape that of
// `shapes`, a checkpoint file's): mnist_cnn evaluated here, in this process, on the runs' test
// set (16 images) in one batch; the model file is written under `dir`.
double test_loss_of(const Params& params, const fs::path& shapes, const ScopedTempDir& dir,
                    const std::string& name) {
  std::vector<NamedTensor> tensors;
  for (const NamedTensor& t : load_safetensors(shapes.string()))
    if (t.name.starts_with("model.") && params.count(t.name))
      tensors.push_back({t.name.substr(std::string("model.").size()),
                         Tensor::from_vector(params.at(t.name), t.tensor.shape())});
  EXPECT_FALSE(tensors.empty());
  const std::string file = dir.file(name + ".safetensors");
  save_safetensors(file, tensors);
  Options o;
  o.set("model", "mnist_cnn");
  o.set("data", "fashion-mnist");
  o.set("data.test_limit", "16");
  o.set("eval.batch", "16");
  o.set("threads", "1");
  o.set("checkpoint", file);
  return run_evaluation(o).loss;
}

// The consensus evaluation of a periodic algorithm (DistributedStrategy::evaluate_average) under a
// failure: local SGD whose rounds span epochs (H = 100, local_sgd.round_spans_epochs = true), 4
// ranks, rank 3 down for the whole run, 2 epochs of 8 steps cut at 9. At epoch 1's end every rank
// holds its own model, and the run's model the epoch's record evaluates is their average, which
// must be the live ranks' mean: its test_loss equals the loss, evaluated here, of the mean of
// ranks 0..2's own 8-step results taken alone (the same run without the failure, whose checkpoint
// at epoch 1's end holds each rank's own model), and not that of the mean over all four.
TEST(ClusterTrain, ConsensusEvaluationIsTheLiveRanksMean) {
  const FailScenario sc("cluster-train-consensus-fail", fail_steps(3, 0, 8));
  const std::string local =
      "--algo local_sgd --set local_sgd.H=100 --set local_sgd.round_spans_epochs=true " +
      sc.common(9, 1, 2);
  const Records failed = sc.train(4, local + sc.events(), "failed");
  sc.train(4, local + " --set checkpoint.every_steps=8", "alone");
  ASSERT_EQ(failed.epochs.size(), 2u);
  ASSERT_EQ(failed.epochs[0]["step"], 8);
  const double got = failed.epochs[0]["test_loss"].get<double>();
  const std::vector<Params> a = sc.each("alone", 8);
  ASSERT_NE(a[0], a[3]) << "the ranks' own models differ";
  const fs::path shapes =
      sc.dir.path / "alone" / "checkpoints" / "step_00000008" / "rank_0.safetensors";
  const double live = test_loss_of(mean_of({&a[0], &a[1], &a[2]}), shapes, sc.dir, "live");
  const double all = test_loss_of(mean_of({&a[0], &a[1], &a[2], &a[3]}), shapes, sc.dir, "all");
  std::cout << fmt::format("consensus test loss {}: live ranks' mean {}, all four's {}\n", got,
                           live, all);
  EXPECT_NEAR(got, live, 1e-5 * live);
  EXPECT_GT(std::abs(got - all), 1e-4 * live);
}

}  // namespace
}  // namespace dplab
