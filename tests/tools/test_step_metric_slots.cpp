// The device metrics' host-side accumulation (train/report/step_metrics.h, issue #19 item 8): the
// per-step slots read back from the device add up exactly, far beyond what an f32 running sum
// (the old device accumulator) can count. The device side is tests/cuda/test_cuda_step_metrics.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "dplab/train/report/step_metrics.h"

namespace dplab {
namespace {

TEST(StepMetricSlots, CountsStayExactBeyondTwoToThe24) {
  // 40 steps of 1,000,003 correct predictions (each an exact f32 integer): 40,000,120 in all,
  // above 2^24 = 16,777,216 where f32 stops holding every integer.
  const int64_t steps = 40;
  const float per_step = 1000003.0f;
  std::vector<float> slots;
  for (int64_t s = 0; s < steps; ++s) slots.insert(slots.end(), {0.5f * 1024, per_step, 0.f, 0.f});
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  add_metric_slots(slots, std::vector<int64_t>(steps, 1024), {loss_sum, correct, seen});
  EXPECT_EQ(correct, 40000120);
  EXPECT_EQ(loss_sum, 40 * 512.0);
  EXPECT_EQ(seen, 40 * 1024);
  // The old accumulator (one f32 sum on the device) cannot give this count: the test would
  // have caught it.
  float f32_sum = 0;
  for (int64_t s = 0; s < steps; ++s) f32_sum += per_step;
  EXPECT_NE(static_cast<int64_t>(f32_sum), 40000120);
}

TEST(StepMetricSlots, AddsOnlyTheFilledSlotsToTheCallersSums) {
  const std::vector<float> slots = {2.5f, 3.f, 0.f,  0.f,  1.25f, 7.f,
                                    0.f,  0.f, 99.f, 99.f, 0.f,   0.f};  // third slot unused
  double loss_sum = 10;
  int64_t correct = 5, seen = 100;
  add_metric_slots(slots, {4, 8}, {loss_sum, correct, seen});
  EXPECT_EQ(loss_sum, 13.75);
  EXPECT_EQ(correct, 15);
  EXPECT_EQ(seen, 112);
}

// nonfinite = skip decided on the device (issue #34): a slot whose step was dropped (either of
// its two flags set) adds neither its loss (NaN here), its count nor its samples.
TEST(StepMetricSlots, DroppedStepsAddNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> slots = {2.5f, 3.f, 0.f, 0.f, nan,  1.f, 1.f, 0.f,
                                    1.f,  2.f, 0.f, 1.f, 0.5f, 4.f, 0.f, 0.f};
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  add_metric_slots(slots, {4, 4, 4, 2}, {loss_sum, correct, seen});
  EXPECT_EQ(loss_sum, 3.0);
  EXPECT_EQ(correct, 7);
  EXPECT_EQ(seen, 6);
}

}  // namespace
}  // namespace dplab
