// train/state/reshard.h without MPI: the sample position against the sampler's own shards, the
// per-algorithm policy, and the manifest's world-size history (test_reshard_mpi.cpp runs it).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "data/temp_dir.h"
#include "dplab/comm/registry.h"
#include "dplab/core/error.h"
#include "dplab/data/sampler.h"
#include "dplab/train/state/reshard.h"
#include "dplab/train/state/reshard_average.h"

namespace dplab {
namespace {

// The samples rank `rank` of `world` trains on in batches [first, last) of an epoch: the
// loader's batches are consecutive runs of `batch` of the sampler's indices.
std::vector<int64_t> batches(int64_t n, int world, int rank, int64_t batch, int64_t first,
                             int64_t last) {
  DistributedSampler s(n, SamplerOptions{rank, world, true, /*seed=*/7, false});
  s.set_epoch(3);
  const std::vector<int64_t> mine = s.indices();
  std::vector<int64_t> r;
  for (int64_t i = first * batch; i < std::min<int64_t>(last * batch, int64_t(mine.size())); ++i)
    r.push_back(mine[size_t(i)]);
  return r;
}

// An epoch that 4 ranks of 16 start and 2 ranks of 32 finish (and 2 -> 4) sees every sample of
// the data set exactly once, plus only the new world's padding: the reference is the data set
// itself, [0, n), not the code under test.
TEST(ReshardPosition, AnEpochSplitBetweenWorldSizesSeesEverySampleOnce) {
  for (const int64_t n : {256, 250}) {
    for (const auto& [w0, b0, w1, b1] :
         {std::tuple{4, 16, 2, 32}, std::tuple{2, 32, 4, 16}, std::tuple{4, 8, 1, 32}}) {
      const int64_t per_epoch = (n + w0 * b0 - 1) / (w0 * b0);  // steps, the same for both
      for (int64_t done = 0; done < per_epoch; ++done) {
        const int64_t counter = done * w0 * b0;  // the global sample counter
        const int64_t next = resharded_step_in_epoch(counter, w1, b1);
        std::multiset<int64_t> seen;
        for (int r = 0; r < w0; ++r)
          for (int64_t i : batches(n, w0, r, b0, 0, done)) seen.insert(i);
        for (int r = 0; r < w1; ++r)
          for (int64_t i : batches(n, w1, r, b1, next, per_epoch)) seen.insert(i);
        // Padding (n = 250) repeats the permutation's first samples to fill the last step: at
        // most w1 - 1 extra, from the new world's last step only.
        const int64_t padded = (n + w1 - 1) / w1 * w1;
        EXPECT_EQ(int64_t(seen.size()), padded) << n << " " << w0 << "->" << w1 << " @" << done;
        for (int64_t i = 0; i < n; ++i)
          EXPECT_GE(seen.count(i), 1u) << "sample " << i << " skipped, " << w0 << "->" << w1;
        int64_t repeated = 0;
        for (int64_t i = 0; i < n; ++i) repeated += int64_t(seen.count(i)) - 1;
        EXPECT_EQ(repeated, padded - n) << n << " " << w0 << "->" << w1 << " @" << done;
      }
    }
  }
}

TEST(ReshardPosition, ACounterThatDoesNotStartAStepIsRefused) {
  EXPECT_EQ(resharded_step_in_epoch(192, 2, 32), 3);
  try {
    resharded_step_in_epoch(192, 5, 16);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 ranks x batch 16 = 80 samples per step"),
              std::string::npos)
        << e.what();
  }
}

// docs/resharding.md's table: every algorithm of more than one process reshards; allreduce
// takes rank 0's identical replica, every other one the average of the replicas. `local` (one
// process) and an algorithm without a policy (an experiment's own) refuse with a reason.
TEST(ReshardPolicy, EveryMultiRankAlgorithmReshards) {
  for (const std::string& algo : strategy_names()) {
    const ReshardPolicy p = reshard_policy(algo, {{"allreduce.compress", "none"}});
    if (algo == "local") {
      EXPECT_FALSE(p.reshards);
      EXPECT_NE(p.refusal.find("one process"), std::string::npos) << p.refusal;
      continue;
    }
    EXPECT_TRUE(p.reshards) << algo;
    EXPECT_GT(p.consensus.size(), 20u) << algo;
    const Combine replicas = algo == "allreduce" ? Combine::rank0 : Combine::mean;
    EXPECT_EQ(p.rules.model, replicas) << algo;
    EXPECT_EQ(p.rules.optimizer, replicas) << algo;
  }
  // Gradient compression: the error-feedback residuals are averaged.
  const ReshardPolicy topk = reshard_policy("allreduce", {{"allreduce.compress", "topk"}});
  EXPECT_TRUE(topk.reshards);
  EXPECT_EQ(algo_rule(topk.rules, "sync.b0.residual"), Combine::mean);
  EXPECT_NE(topk.consensus.find("residuals averaged"), std::string::npos) << topk.consensus;
  // Global state stays rank 0's (checked equal), per-rank state is averaged, state of the
  // world is re-derived.
  const ReshardPolicy diloco = reshard_policy("diloco", {});
  EXPECT_EQ(algo_rule(diloco.rules, "theta_global"), Combine::same);
  EXPECT_EQ(algo_rule(diloco.rules, "outer_momentum"), Combine::same);
  const ReshardPolicy sgp = reshard_policy("sgp", {});
  EXPECT_EQ(algo_rule(sgp.rules, "ranks"), Combine::fresh);
  EXPECT_EQ(sgp.rules.model_weight, "push_sum_weight");
  EXPECT_EQ(sgp.rules.set.at("push_sum_weight"), "1");
  const ReshardPolicy daso = reshard_policy("daso", {});
  EXPECT_EQ(algo_rule(daso.rules, "pending.0.sum"), Combine::fresh);
  EXPECT_EQ(algo_rule(daso.rules, "cycle.B"), Combine::same);
  EXPECT_EQ(algo_rule(reshard_policy("dcs3gd", {}).rules, "V"), Combine::mean);
  EXPECT_EQ(algo_rule(reshard_policy("oscars", {}).rules, "tau"), Combine::fresh);
  const ReshardPolicy mine = reshard_policy("my_algo", {});
  EXPECT_FALSE(mine.reshards);
  EXPECT_NE(mine.refusal.find("no resharding policy"), std::string::npos) << mine.refusal;
}

Manifest sample_manifest(const std::filesystem::path& dir) {
  Manifest m;
  m.dir = dir;
  m.step = 6;
  m.epoch = 1;
  m.step_in_epoch = 2;
  m.world_size = 4;
  m.algo = "allreduce";
  m.config = {{"batch", "16"}};
  for (int r = 0; r < 4; ++r) m.files.push_back({r, "rank_" + std::to_string(r) + ".safetensors"});
  return m;
}

// The combination rules on four hand-made rank files (train/state/reshard_average.h).
StateDict rank_file(int rank, float x, float w, int64_t steps, const std::string& global) {
  StateDict s("rank_" + std::to_string(rank));
  s.put_tensor("model.w", Tensor::from_vector({x, 2 * x}, {2}));
  s.put_tensor("optim.momentum_buffer", Tensor::from_vector({x + 1}, {1}));
  s.put_tensor("optim.steps", Tensor::from_vector_i64({steps}, {}));
  s.put_tensor("algo.theta", Tensor::from_vector({7}, {1}));
  s.put_tensor("algo.residual", Tensor::from_vector({x * 10}, {1}));
  s.put_double("algo.weight", w);
  s.put_string("algo.global", global);
  s.put_int("algo.ranks", 4);
  s.put_int("algo.stat", rank);
  s.put_int("loop.global_step", 3);
  return s;
}

TEST(ReshardConsensus, EachEntryFollowsItsRule) {
  Manifest m;
  m.dir = "ck";
  m.world_size = 4;
  std::vector<StateDict> files;
  const float xs[] = {1, 2, 4, 9}, ws[] = {1, 1, 0.5f, 0.5f};
  for (int r = 0; r < 4; ++r) files.push_back(rank_file(r, xs[r], ws[r], 5, "g"));
  ConsensusRules rules;
  rules.model = Combine::mean;
  rules.optimizer = Combine::mean;
  rules.model_weight = "weight";
  rules.algo = {{"residual", Combine::mean},
                {"ranks", Combine::fresh},
                {"stat", Combine::rank0},
                {"weight", Combine::same}};
  rules.set = {{"weight", "1"}};
  StateDict fresh;
  fresh.put_int("ranks", 2);
  const StateDict c = consensus_state(m, files, rules, fresh);
  // Weighted: (1 + 2 + 0.5 x 4 + 0.5 x 9) / 3 = 9.5 / 3.
  EXPECT_FLOAT_EQ(c.tensor("model.w").to_vector()[0], float(9.5 / 3));
  EXPECT_FLOAT_EQ(c.tensor("model.w").to_vector()[1], float(19.0 / 3));
  EXPECT_FLOAT_EQ(c.tensor("optim.momentum_buffer").to_vector()[0], 5.0f);  // (2+3+5+10)/4
  EXPECT_EQ(c.tensor("optim.steps").to_vector_i64()[0], 5);
  EXPECT_FLOAT_EQ(c.tensor("algo.residual").to_vector()[0], 40.0f);
  EXPECT_FLOAT_EQ(c.tensor("algo.theta").to_vector()[0], 7.0f);
  EXPECT_EQ(c.get_double("algo.weight"), 1.0);
  EXPECT_EQ(c.get_int("algo.ranks"), 2);
  EXPECT_EQ(c.get_int("algo.stat"), 0);
  EXPECT_EQ(c.get_string("algo.global"), "g");
  EXPECT_EQ(c.get_int("loop.global_step"), 3);
  // Global state that differs between the ranks, or a step count under `mean`, is an error
  // naming the file and the key.
  auto fails = [&](std::vector<StateDict> f, const ConsensusRules& r, const std::string& what) {
    try {
      consensus_state(m, f, r, fresh);
      ADD_FAILURE() << "expected an error naming " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  std::vector<StateDict> other = files;
  other[2] = rank_file(2, 4, 0.5f, 5, "h");
  fails(other, rules, "rank_2: state value 'algo.global' = 'h'");
  other[2] = rank_file(2, 4, 0.5f, 6, "g");
  fails(other, rules, "rank_2: state tensor 'optim.steps' differs");
  rules.differing_step_counts = true;  // Oscars: rank 0's step count
  EXPECT_EQ(consensus_state(m, other, rules, fresh).tensor("optim.steps").to_vector_i64()[0], 5);
  other[2].put_tensor("algo.extra", Tensor::from_vector({1}, {1}));
  fails(other, rules, "rank_2: 6 state tensors to combine");
}

TEST(ReshardManifest, WorldSizesAndTheSampleCounterRoundTrip) {
  test::ScopedTempDir dir("reshard-manifest");
  Manifest m = sample_manifest(dir.path);
  m.samples_in_epoch = 128;
  m.world_sizes = {{0, 4}, {3, 2}, {5, 4}};
  write_manifest(dir.path, m);
  const Manifest back = read_manifest(dir.path);
  EXPECT_EQ(back.samples_in_epoch, 128);
  ASSERT_EQ(back.world_sizes.size(), 3u);
  EXPECT_EQ(back.world_sizes[1].from_step, 3);
  EXPECT_EQ(back.world_sizes[1].world_size, 2);
  EXPECT_EQ(checkpoint_samples_in_epoch(back), 2 * 4 * 16);
  // Written before the history: one span from step 0, the counter from the loop position.
  Manifest old = sample_manifest(dir.path);
  write_manifest(dir.path, old);
  const Manifest o = read_manifest(dir.path);
  EXPECT_EQ(o.samples_in_epoch, -1);
  ASSERT_EQ(o.world_sizes.size(), 1u);
  EXPECT_EQ(o.world_sizes[0].world_size, 4);
  EXPECT_EQ(checkpoint_samples_in_epoch(o), 128);
  // A history that does not end at the manifest's world size is refused naming the key.
  m.world_sizes = {{0, 4}, {3, 2}};
  write_manifest(dir.path, m);
  try {
    read_manifest(dir.path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'world_sizes' ends with 2 ranks"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dplab
