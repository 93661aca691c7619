// cluster.failure_data = reassign: how the down ranks' samples of a step are split among the
// live ranks (train/virtual/failure_data.h), against hand-written splits.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dplab/core/usage_error.h"
#include "dplab/train/virtual/failure_data.h"

namespace dplab {
namespace {

using Ix = std::vector<int64_t>;

// Two down ranks' batches, 4 + 2 = 6 samples, over 4 live ranks: part j is
// [floor(6 j / 4), floor(6 (j + 1) / 4)) = [0,1), [1,3), [3,4), [4,6) of the concatenation.
TEST(FailureData, DownBatchesAreSplitInRankOrderIntoContiguousParts) {
  const std::vector<Ix> down{{10, 11, 12, 13}, {20, 21}};
  EXPECT_EQ(reassigned_samples(down, 0, 4), (Ix{10}));
  EXPECT_EQ(reassigned_samples(down, 1, 4), (Ix{11, 12}));
  EXPECT_EQ(reassigned_samples(down, 2, 4), (Ix{13}));
  EXPECT_EQ(reassigned_samples(down, 3, 4), (Ix{20, 21}));
  // One down rank's 16 samples over 3 live ranks: 5, 5, 6.
  Ix sixteen(16);
  for (int i = 0; i < 16; ++i) sixteen[i] = 100 + i;
  EXPECT_EQ(reassigned_samples({sixteen}, 0, 3), (Ix{100, 101, 102, 103, 104}));
  EXPECT_EQ(reassigned_samples({sixteen}, 1, 3), (Ix{105, 106, 107, 108, 109}));
  EXPECT_EQ(reassigned_samples({sixteen}, 2, 3), (Ix{110, 111, 112, 113, 114, 115}));
}

// Whatever the counts, the parts are every down sample exactly once, in order, and differ in
// size by at most one.
TEST(FailureData, PartsCoverEveryDownSampleOnce) {
  for (int m = 0; m <= 40; ++m)
    for (int live = 1; live <= 7; ++live) {
      Ix all(m);
      for (int i = 0; i < m; ++i) all[i] = i;
      const std::vector<Ix> down{Ix(all.begin(), all.begin() + m / 2),
                                 Ix(all.begin() + m / 2, all.end())};
      Ix joined;
      size_t lo = size_t(m), hi = 0;
      for (int j = 0; j < live; ++j) {
        const Ix part = reassigned_samples(down, j, live);
        joined.insert(joined.end(), part.begin(), part.end());
        lo = std::min(lo, part.size());
        hi = std::max(hi, part.size());
      }
      EXPECT_EQ(joined, all) << m << " samples, " << live << " live";
      EXPECT_LE(hi - lo, 1u) << m << " samples, " << live << " live";
    }
}

TEST(FailureData, NoDownSamplesGiveNothing) {
  EXPECT_TRUE(reassigned_samples({}, 0, 3).empty());
  EXPECT_TRUE(reassigned_samples({{}, {}}, 2, 3).empty());
}

TEST(FailureData, OptionValues) {
  EXPECT_EQ(parse_failure_data("reassign"), FailureData::reassign);
  EXPECT_EQ(parse_failure_data("drop"), FailureData::drop);
  EXPECT_THROW(parse_failure_data("keep"), UsageError);
  EXPECT_THROW(reassigned_samples({{1}}, 3, 3), Error);
}

}  // namespace
}  // namespace dplab
