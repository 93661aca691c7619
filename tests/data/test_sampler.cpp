// DistributedSampler: PyTorch semantics (padding, strided shards, per-epoch permutation).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "dplab/data/sampler.h"

namespace dplab {
namespace {

TEST(Sampler, UnshuffledPaddingRepeatsTheStart) {
  // N = 10, world = 4: ceil(10/4) = 3 per rank, total 12, padded with indices 0 and 1.
  SamplerOptions o;
  o.world_size = 4;
  o.shuffle = false;
  std::vector<std::vector<int64_t>> expect = {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}};
  for (int r = 0; r < 4; ++r) {
    o.rank = r;
    DistributedSampler s(10, o);
    EXPECT_EQ(s.num_samples(), 3);
    EXPECT_EQ(s.indices(), expect[size_t(r)]) << "rank " << r;
  }
}

TEST(Sampler, PaddingLongerThanDatasetCycles) {
  // N = 2, world = 5: total 5 = [0, 1, 0, 1, 0].
  SamplerOptions o;
  o.world_size = 5;
  o.shuffle = false;
  DistributedSampler s(2, o);
  EXPECT_EQ(s.global_order(), (std::vector<int64_t>{0, 1, 0, 1, 0}));
}

TEST(Sampler, DropLastTruncates) {
  SamplerOptions o;
  o.world_size = 4;
  o.shuffle = false;
  o.drop_last = true;
  o.rank = 1;
  DistributedSampler s(10, o);
  EXPECT_EQ(s.num_samples(), 2);
  EXPECT_EQ(s.indices(), (std::vector<int64_t>{1, 5}));
}

TEST(Sampler, StridedShardsCoverEverythingOnce) {
  const int64_t n = 1003;
  for (int world : {1, 2, 3, 8}) {
    SamplerOptions o;
    o.world_size = world;
    o.seed = 42;
    std::vector<int64_t> count(n, 0);
    int64_t total = 0;
    for (int r = 0; r < world; ++r) {
      o.rank = r;
      DistributedSampler s(n, o);
      s.set_epoch(3);
      auto idx = s.indices();
      EXPECT_EQ(int64_t(idx.size()), (n + world - 1) / world);
      for (int64_t i : idx) count[size_t(i)]++;
      total += int64_t(idx.size());
    }
    EXPECT_EQ(total, (n + world - 1) / world * world);
    // Every index at least once; exactly `total - n` indices twice (the padding).
    int64_t twice = 0;
    for (int64_t c : count) {
      EXPECT_GE(c, 1);
      EXPECT_LE(c, 2);
      twice += c == 2;
    }
    EXPECT_EQ(twice, total - n) << "world " << world;
  }
}

TEST(Sampler, PermutationDependsOnEpochAndSeedOnly) {
  SamplerOptions o;
  o.seed = 7;
  DistributedSampler a(500, o), b(500, o);
  a.set_epoch(0);
  b.set_epoch(0);
  EXPECT_EQ(a.indices(), b.indices());  // same seed, same epoch: same order
  auto e0 = a.indices();
  a.set_epoch(1);
  auto e1 = a.indices();
  EXPECT_NE(e0, e1);  // a new permutation per epoch
  auto sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 500; ++i) EXPECT_EQ(sorted[size_t(i)], i);  // still a permutation
  a.set_epoch(0);
  EXPECT_EQ(a.indices(), e0);  // no hidden state: going back reproduces the order
  SamplerOptions o2 = o;
  o2.seed = 8;
  DistributedSampler c(500, o2);
  EXPECT_NE(c.indices(), e0);
}

TEST(Sampler, PermutationIsRoughlyUniform) {
  // Position of element 0 over many seeds: each of 4 positions about 1/4 of the time.
  std::vector<int> where(4, 0);
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    auto p = philox_permutation(4, seed, 0);
    where[size_t(std::find(p.begin(), p.end(), 0) - p.begin())]++;
  }
  for (int c : where) EXPECT_NEAR(c, 1000, 120);
}

TEST(Sampler, RejectsBadRank) {
  SamplerOptions o;
  o.world_size = 2;
  o.rank = 2;
  EXPECT_THROW(DistributedSampler(10, o), std::exception);
}

}  // namespace
}  // namespace dplab
