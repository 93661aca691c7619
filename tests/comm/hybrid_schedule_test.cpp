// The hybrid schedule as a pure function (ALGORITHMS.md §2): stage split, which iterations
// communicate, which step, when the gradient is zeroed, and the number of communication steps
// against P-SGD. Every expected value below is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "dplab/comm/algorithms/hybrid.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

HybridConfig config(HybridSplit split = HybridSplit::ceil,
                    HybridCounter counter = HybridCounter::global, int64_t W = 8, int64_t R = 12) {
  HybridConfig c;
  c.split = split;
  c.counter = counter;
  c.W = W;
  c.R = R;
  return c;
}

std::vector<int> stages(const HybridConfig& c, int64_t E) {
  std::vector<int> s;
  for (int64_t e = 0; e < E; ++e) s.push_back(hybrid_stage(c, e, E));
  return s;
}

// n1 epochs of stage 1, then n2 of stage 2, then n3 of stage 3.
std::vector<int> blocks(int n1, int n2, int n3) {
  std::vector<int> s(n1, 1);
  s.insert(s.end(), n2, 2);
  s.insert(s.end(), n3, 3);
  return s;
}

// Every iteration of E epochs of n steps, in order.
std::vector<StepInfo> iterations(int64_t E, int64_t n) {
  std::vector<StepInfo> v;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t q = 0; q < n; ++q) {
      StepInfo s;
      s.epoch = e;
      s.step_in_epoch = q;
      s.global_step = e * n + q;
      s.steps_per_epoch = n;
      s.total_epochs = E;
      v.push_back(s);
    }
  return v;
}

std::set<int64_t> sync_iterations(const HybridConfig& c, int64_t E, int64_t n) {
  std::set<int64_t> s;
  for (const auto& it : iterations(E, n))
    if (hybrid_schedule(c, it).sync) s.insert(it.global_step);
  return s;
}

int64_t count_syncs(const HybridConfig& c, int64_t E, int64_t n) {
  return static_cast<int64_t>(sync_iterations(c, E, n).size());
}

TEST(HybridStages, TwentyEpochs) {
  // Thesis code, S = ceil(20/3) = 7: stage changes at epochs 7 and 15 ("At epochs 7 and 15 we
  // have the change of stage"): 7 / 8 / 5 epochs.
  EXPECT_EQ(stages(config(), 20), blocks(7, 8, 5));
  // Algorithm 4, i = epoch+1: stage 1 iff 3i <= 20 (i <= 6), stage 2 iff 3i <= 40 (i <= 13).
  EXPECT_EQ(stages(config(HybridSplit::thirds), 20), blocks(6, 7, 7));
}

TEST(HybridStages, EpochCountsNotDivisibleByThree) {
  const auto ceil = config(), thirds = config(HybridSplit::thirds);
  // E = 16 (the code's argparse default): S = 6, stage 2 = [6, 12], 3 = [13, 15] -> 6 / 7 / 3.
  EXPECT_EQ(stages(ceil, 16), blocks(6, 7, 3));
  // E = 10: S = 4, stage 2 = [4, 8], stage 3 = {9}.
  EXPECT_EQ(stages(ceil, 10), blocks(4, 5, 1));
  // E = 7: S = 3, stage 2 = [3, 6] reaches the last epoch: no stage 3 at all.
  EXPECT_EQ(stages(ceil, 7), blocks(3, 4, 0));
  // E = 5: S = 2, stage 2 = [2, 4]; E = 2: S = 1; E = 1: stage 1 only.
  EXPECT_EQ(stages(ceil, 5), blocks(2, 3, 0));
  EXPECT_EQ(stages(ceil, 2), blocks(1, 1, 0));
  EXPECT_EQ(stages(ceil, 1), blocks(1, 0, 0));
  // Thirds: E = 16: i <= 5, i <= 10 -> 5 / 5 / 6; E = 10: i <= 3, i <= 6 -> 3 / 3 / 4;
  // E = 7: i <= 2, i <= 4 -> 2 / 2 / 3; E = 3: one epoch each; E = 1: 3 > 1 and 3 <= 2 is
  // false, so the single epoch is stage 3 (Algorithm 4 has no stage-1 epoch when E < 3).
  EXPECT_EQ(stages(thirds, 16), blocks(5, 5, 6));
  EXPECT_EQ(stages(thirds, 10), blocks(3, 3, 4));
  EXPECT_EQ(stages(thirds, 7), blocks(2, 2, 3));
  EXPECT_EQ(stages(thirds, 3), blocks(1, 1, 1));
  EXPECT_EQ(stages(thirds, 1), blocks(0, 0, 1));
  EXPECT_THROW(hybrid_stage(ceil, 20, 20), Error);
}

TEST(HybridSchedule, WhichIterationsCommunicateE20GlobalCounter) {
  // E = 20, 10 iterations per epoch, W = 8, R = 12, ceil split, global counter:
  // stage 1 = it 0..69 (all), stage 2 = it 70..149 (multiples of 8: 72, 80, ..., 144),
  // stage 3 = it 150..199 (multiples of 12: 156, 168, 180, 192).
  std::set<int64_t> expect;
  for (int64_t it = 0; it < 70; ++it) expect.insert(it);
  for (int64_t it = 72; it <= 144; it += 8) expect.insert(it);
  for (int64_t it : {156, 168, 180, 192}) expect.insert(it);
  const auto c = config();
  EXPECT_EQ(sync_iterations(c, 20, 10), expect);
  EXPECT_EQ(expect.size(), 70u + 10u + 4u);

  const auto its = iterations(20, 10);
  for (const auto& it : its) {
    const HybridAction a = hybrid_schedule(c, it);
    const int64_t g = it.global_step;
    const int stage = g < 70 ? 1 : g < 150 ? 2 : 3;
    EXPECT_EQ(a.stage, stage) << "it " << g;
    // Stages 1 and 3 step every iteration; stage 2 only on its syncs.
    EXPECT_EQ(a.step, stage != 2 || g % 8 == 0) << "it " << g;
    // Stages 1 and 3 zero before every backward; stage 2 only after a synced step. At it = 70
    // the last stage-1 gradient is kept (carry_grad, thesis code).
    const bool zero = stage != 2 || (g - 1 >= 70 && (g - 1) % 8 == 0);
    EXPECT_EQ(a.zero_before, zero) << "it " << g;
  }
  HybridConfig clean = c;
  clean.carry_grad = false;
  EXPECT_TRUE(hybrid_schedule(clean, its[70]).zero_before);
  EXPECT_FALSE(hybrid_schedule(clean, its[71]).zero_before);
}

TEST(HybridSchedule, PerEpochCounter) {
  // Algorithm 4's q = 1..n per epoch. n = 30, W = 8, R = 12: stage 2 syncs at q = 8, 16, 24
  // (step_in_epoch 7, 15, 23) in each of its 8 epochs; stage 3 at q = 12, 24 in each of 5.
  const auto c = config(HybridSplit::ceil, HybridCounter::epoch);
  int64_t s1 = 0, s2 = 0, s3 = 0;
  for (const auto& it : iterations(20, 30)) {
    const HybridAction a = hybrid_schedule(c, it);
    if (!a.sync) continue;
    (a.stage == 1 ? s1 : a.stage == 2 ? s2 : s3)++;
    if (a.stage == 2) {
      EXPECT_EQ((it.step_in_epoch + 1) % 8, 0);
    }
    if (a.stage == 3) {
      EXPECT_EQ((it.step_in_epoch + 1) % 12, 0);
    }
  }
  EXPECT_EQ(s1, 7 * 30);
  EXPECT_EQ(s2, 8 * 3);
  EXPECT_EQ(s3, 5 * 2);
  // The 6 micro-batches after q = 24 carry into the next epoch's window: the first iteration of
  // the next stage-2 epoch does not zero; the one after a sync does.
  StepInfo s = iterations(20, 30)[8 * 30];  // epoch 8 (stage 2), q = 1
  EXPECT_FALSE(hybrid_schedule(c, s).zero_before);
  s = iterations(20, 30)[8 * 30 + 8];  // q = 9, after the sync at q = 8
  EXPECT_TRUE(hybrid_schedule(c, s).zero_before);
  // With n = 10 < R, stage 3 never communicates under the per-epoch counter.
  EXPECT_EQ(count_syncs(c, 20, 10), 7 * 10 + 8 * 1 + 0);
}

TEST(HybridSchedule, CommunicationStepsAgainstPSgd) {
  // Exact thirds and windows that divide the epoch: the thesis formula
  // n*E/3 + n*E/(3W) + n*E/(3R) = 24 + 3 + 2 = 29 of 72 (E = 3, n = 24, W = 8, R = 12), 29/72.
  for (auto counter : {HybridCounter::global, HybridCounter::epoch})
    EXPECT_EQ(count_syncs(config(HybridSplit::thirds, counter), 3, 24), 29);
  // The study's setting: MNIST 60,000 / K = 4 / B = 64 -> n = 235, E = 20, global counter:
  // 7*235 = 1645 + (ceil(3525/8) - ceil(1645/8) = 441 - 206 = 235)
  //              + (ceil(4700/12) - ceil(3525/12) = 392 - 294 = 98) = 1978 of 4700 (0.421);
  // R = 16: + (294 - 221 = 73) -> 1953 (0.416). The notes' simulation: 0.421 and 0.416.
  EXPECT_EQ(count_syncs(config(), 20, 235), 1978);
  EXPECT_EQ(count_syncs(config(HybridSplit::ceil, HybridCounter::global, 8, 16), 20, 235), 1953);
}

TEST(HybridSchedule, Modes) {
  HybridConfig each = config(), only = config();
  each.mode = HybridMode::each_iter;
  only.mode = HybridMode::only_end;
  for (const auto& it : iterations(7, 5)) {
    const HybridAction a = hybrid_schedule(each, it), b = hybrid_schedule(only, it);
    EXPECT_TRUE(a.sync && a.step && a.zero_before);
    EXPECT_EQ(a.stage, 1);
    EXPECT_TRUE(!b.sync && b.step && b.zero_before);
    EXPECT_EQ(b.stage, 3);
  }
}

TEST(HybridConfig, OptionsAndErrors) {
  Options o;
  o.set("hybrid.W", "4");
  o.set("hybrid.R", "16");
  o.set("hybrid.mode", "only_end");
  o.set("hybrid.split", "thirds");
  o.set("hybrid.counter", "epoch");
  o.set("hybrid.carry_grad", "false");
  const HybridConfig c = HybridConfig::from_options(o);
  EXPECT_EQ(c.W, 4);
  EXPECT_EQ(c.R, 16);
  EXPECT_EQ(c.mode, HybridMode::only_end);
  EXPECT_EQ(c.split, HybridSplit::thirds);
  EXPECT_EQ(c.counter, HybridCounter::epoch);
  EXPECT_FALSE(c.carry_grad);
  EXPECT_TRUE(o.unused_keys().empty());
  const HybridConfig d = HybridConfig::from_options(Options{});
  EXPECT_EQ(d.W, 8);
  EXPECT_EQ(d.R, 12);
  EXPECT_EQ(d.mode, HybridMode::hybrid);
  EXPECT_EQ(d.split, HybridSplit::ceil);
  EXPECT_EQ(d.counter, HybridCounter::global);
  // A HybridConfig built in code starts where unset options do (the same declarations).
  const HybridConfig built;
  EXPECT_EQ(built.W, 8);
  EXPECT_EQ(built.mode, HybridMode::hybrid);
  EXPECT_EQ(built.split, HybridSplit::ceil);
  EXPECT_EQ(built.counter, HybridCounter::global);
  EXPECT_FALSE(built.accumulate_mean);
  Options each;
  each.set("hybrid.mode", "each_iter");
  EXPECT_EQ(HybridConfig::from_options(each).mode, HybridMode::each_iter);
  Options bad;
  bad.set("hybrid.mode", "sometimes");
  EXPECT_THROW(HybridConfig::from_options(bad), Error);
  Options zero;
  zero.set("hybrid.W", "0");
  EXPECT_THROW(HybridConfig::from_options(zero), Error);
}

}  // namespace
}  // namespace dplab
