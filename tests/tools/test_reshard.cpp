// tools/train/reshard.h without MPI: the sample position against the sampler's own shards, the
// per-algorithm policy, and the manifest's world-size history (test_reshard_mpi.cpp runs it).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "data/temp_dir.h"
#include "dplab/comm/registry.h"
#include "dplab/core/error.h"
#include "dplab/data/sampler.h"
#include "dplab/tools/train/reshard.h"

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

// docs/resharding.md's table: allreduce, diloco and local_sgd reshard (the latter two at a
// round's end, averaging the optimizer state), every other algorithm refuses with a reason.
TEST(ReshardPolicy, EveryAlgorithmReshardsOrRefusesWithAReason) {
  for (const std::string& algo : strategy_names()) {
    const ReshardPolicy p = reshard_policy(algo, {{"allreduce.compress", "none"}});
    if (algo == "allreduce" || algo == "diloco" || algo == "local_sgd") {
      EXPECT_TRUE(p.reshards) << algo;
      EXPECT_NE(p.consensus.find("rank 0"), std::string::npos) << p.consensus;
      EXPECT_EQ(p.average_optimizer, algo != "allreduce") << algo;
      EXPECT_EQ(p.round_key.empty(), algo == "allreduce") << algo;
    } else {
      EXPECT_FALSE(p.reshards) << algo;
      EXPECT_GT(p.refusal.size(), 20u) << algo << ": " << p.refusal;
      EXPECT_EQ(p.refusal.find("no resharding policy"), std::string::npos) << algo;
    }
  }
  const ReshardPolicy topk = reshard_policy("allreduce", {{"allreduce.compress", "topk"}});
  EXPECT_FALSE(topk.reshards);
  EXPECT_NE(topk.refusal.find("residuals per rank"), std::string::npos) << topk.refusal;
  EXPECT_FALSE(reshard_policy("my_algo", {}).reshards);
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
