// The LR schedule's epoch loss (train/report/epoch_loss.h) under mpiexec: ranks with different
// local losses must take the same reduce-on-plateau decision in the same epoch.
//
// Rank 0 sees 10 samples per epoch with mean loss 1.0 in every epoch: on its own its detector
// (patience 0, threshold 1%) finds no progress at epoch 1 and cuts there. Rank r >= 1 sees
// 10 (r + 1) samples with mean losses 2.0, 1.0, 0.5, 0.5, 0.5. The world's sample-weighted mean
// (10 * 1.0 + W * L_e) / (10 + W), W = Σ_{r>=1} 10 (r + 1), falls by more than 1% at epochs 1
// and 2 and is flat from epoch 3 (N = 2: 1.667, 1.0, 0.667, 0.667, 0.667). So every rank's
// factor after epochs 0..4 is 1, 1, 1, 0.5, 0.25 (a cut at each flat epoch: patience 0 means
// the first epoch without improvement is a plateau, and the count restarts after a cut).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dplab/comm/mpi_env.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/report/epoch_loss.h"

namespace dplab {
namespace {

TEST(EpochLoss, WorldMeanIsSampleWeighted) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  RankGroup ranks(R, N);
  // Rank r: r + 1 samples of loss r + 1 (sum (r + 1)^2). Mean: Σ (r+1)^2 / Σ (r+1).
  double num = 0, den = 0;
  for (int r = 0; r < N; ++r) {
    num += double(r + 1) * (r + 1);
    den += double(r + 1);
  }
  EXPECT_DOUBLE_EQ(world_epoch_loss(ranks, double(R + 1) * (R + 1), R + 1), num / den);
  EXPECT_EQ(world_epoch_loss(ranks, 0.0, 0), 0.0);
}

TEST(EpochLoss, PlateauCutsInTheSameEpochOnEveryRank) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  if (N < 2) GTEST_SKIP() << "needs ranks with different losses";
  RankGroup ranks(R, N);
  Options opt;
  opt.set("lr.schedule", "plateau");
  opt.set("lr.patience", "0");
  opt.set("lr.factor", "0.5");
  opt.set("lr.threshold", "0.01");
  auto schedule = make_lr_schedule(opt, 5);
  const int64_t seen = 10 * (R + 1);
  const double other[5] = {2.0, 1.0, 0.5, 0.5, 0.5};
  const double expect[5] = {1, 1, 1, 0.5, 0.25};
  for (int e = 0; e < 5; ++e) {
    const double mean = R == 0 ? 1.0 : other[e];
    observe_epoch_loss(*schedule, ranks, mean * double(seen), seen);
    const double f = schedule->factor(int64_t(e + 1), 1);
    EXPECT_EQ(f, expect[e]) << "rank " << R << " after epoch " << e;
    const std::vector<std::string> all = ranks.allgather(std::to_string(f));
    for (int r = 0; r < N; ++r)
      EXPECT_EQ(all[size_t(r)], all[0]) << "ranks 0 and " << r << " after epoch " << e;
  }
}

}  // namespace
}  // namespace dplab
