// LR schedules at chosen steps against their formulas, and the plateau detector on scripted
// metric sequences.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/core/error.h"
#include "dplab/optim/schedule.h"

namespace dplab {
namespace {

Options opts(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Options o;
  for (auto& [k, v] : kv) o.set(k, v);
  return o;
}

TEST(LrSchedule, Constant) {
  auto s = make_lr_schedule(Options{}, 10);
  for (int64_t step : {0, 1, 99, 12345}) EXPECT_EQ(s->factor(step, 10), 1.0);
}

TEST(LrSchedule, StepDecaysEveryStepSizeEpochs) {
  auto s = make_lr_schedule(
      opts({{"lr.schedule", "step"}, {"lr.step_size", "3"}, {"lr.gamma", "0.5"}}), 100);
  EXPECT_DOUBLE_EQ(s->factor(0, 10), 1.0);
  EXPECT_DOUBLE_EQ(s->factor(29, 10), 1.0);   // epoch 2
  EXPECT_DOUBLE_EQ(s->factor(30, 10), 0.5);   // epoch 3
  EXPECT_DOUBLE_EQ(s->factor(65, 10), 0.25);  // epoch 6
}

TEST(LrSchedule, MultiStepAtMilestoneEpochs) {
  auto s = make_lr_schedule(
      opts({{"lr.schedule", "multistep"}, {"lr.milestones", "2, 5"}, {"lr.gamma", "0.1"}}), 10);
  EXPECT_DOUBLE_EQ(s->factor(7, 4), 1.0);      // epoch 1
  EXPECT_DOUBLE_EQ(s->factor(8, 4), 0.1);      // epoch 2
  EXPECT_DOUBLE_EQ(s->factor(19, 4), 0.1);     // epoch 4
  EXPECT_NEAR(s->factor(20, 4), 0.01, 1e-15);  // epoch 5
}

TEST(LrSchedule, LinearWarmupPerStepThenMainSchedule) {
  auto s =
      make_lr_schedule(opts({{"lr.warmup_epochs", "2"}, {"lr.warmup_start_factor", "0.1"}}), 10);
  // 2 epochs of 5 steps: 10 warm-up steps, factor = 0.1 + 0.9 * step / 10.
  EXPECT_DOUBLE_EQ(s->factor(0, 5), 0.1);
  EXPECT_DOUBLE_EQ(s->factor(5, 5), 0.55);
  EXPECT_DOUBLE_EQ(s->factor(9, 5), 0.1 + 0.9 * 0.9);
  EXPECT_DOUBLE_EQ(s->factor(10, 5), 1.0);
  EXPECT_DOUBLE_EQ(s->factor(500, 5), 1.0);
  // Warm-up multiplies the main schedule, which keeps its absolute epochs.
  auto m = make_lr_schedule(opts({{"lr.schedule", "multistep"},
                                  {"lr.milestones", "1"},
                                  {"lr.gamma", "0.1"},
                                  {"lr.warmup_epochs", "2"}}),
                            10);
  EXPECT_DOUBLE_EQ(m->factor(0, 5), 0.0);  // default start factor 0
  EXPECT_DOUBLE_EQ(m->factor(4, 5), 0.4);
  EXPECT_DOUBLE_EQ(m->factor(5, 5), 0.1 * 0.5);
  EXPECT_DOUBLE_EQ(m->factor(12, 5), 0.1);
}

TEST(LrSchedule, PolyByFormula) {
  auto s = make_lr_schedule(opts({{"lr.schedule", "poly"}, {"lr.power", "2"}}), 10);
  EXPECT_DOUBLE_EQ(s->factor(0, 4), 1.0);
  EXPECT_DOUBLE_EQ(s->factor(20, 4), 0.25);                       // t = 5 of 10
  EXPECT_DOUBLE_EQ(s->factor(30, 4), 0.0625);                     // t = 7.5
  EXPECT_DOUBLE_EQ(s->factor(3, 4), std::pow(1 - 0.75 / 10, 2));  // smooth within an epoch
  EXPECT_DOUBLE_EQ(s->factor(40, 4), 0.0);
  EXPECT_DOUBLE_EQ(s->factor(100, 4), 0.0);  // clamped after the end
  auto f = make_lr_schedule(
      opts({{"lr.schedule", "poly"}, {"lr.power", "2"}, {"lr.min_factor", "0.1"}}), 10);
  EXPECT_DOUBLE_EQ(f->factor(20, 4), 0.1 + 0.9 * 0.25);
  EXPECT_DOUBLE_EQ(f->factor(100, 4), 0.1);
}

TEST(LrSchedule, CosineByFormula) {
  auto s = make_lr_schedule(opts({{"lr.schedule", "cosine"}}), 8);
  EXPECT_DOUBLE_EQ(s->factor(0, 2), 1.0);
  EXPECT_DOUBLE_EQ(s->factor(4, 2), 0.5 * (1 + std::cos(M_PI / 4)));  // t = 2 of 8
  EXPECT_NEAR(s->factor(8, 2), 0.5, 1e-15);                           // halfway
  EXPECT_NEAR(s->factor(16, 2), 0.0, 1e-15);
  EXPECT_NEAR(s->factor(40, 2), 0.0, 1e-15);
  auto m = make_lr_schedule(opts({{"lr.schedule", "cosine"}, {"lr.min_factor", "0.2"}}), 8);
  EXPECT_NEAR(m->factor(8, 2), 0.2 + 0.8 * 0.5, 1e-15);
  EXPECT_NEAR(m->factor(16, 2), 0.2, 1e-15);
}

TEST(LrSchedule, ReduceOnPlateauTransitions) {
  auto s = make_lr_schedule(opts({{"lr.schedule", "plateau"},
                                  {"lr.patience", "1"},
                                  {"lr.factor", "0.5"},
                                  {"lr.threshold", "0.1"}}),
                            100);
  // best 10; 9.5 is not below 9 (bad 1); 9.2 bad 2 > patience -> halve; 8 improves (< 9);
  // 7.5 and 7.3 are not below 7.2 -> halve again.
  const std::vector<double> metrics = {10, 9.5, 9.2, 8.0, 7.5, 7.3};
  const std::vector<double> expected = {1, 1, 0.5, 0.5, 0.5, 0.25};
  for (size_t i = 0; i < metrics.size(); ++i) {
    s->observe_epoch(metrics[i]);
    EXPECT_DOUBLE_EQ(s->factor(static_cast<int64_t>(i + 1) * 10, 10), expected[i])
        << "after epoch " << i;
  }
  // Its state restores into a fresh schedule, which then continues identically.
  auto r = make_lr_schedule(opts({{"lr.schedule", "plateau"},
                                  {"lr.patience", "1"},
                                  {"lr.factor", "0.5"},
                                  {"lr.threshold", "0.1"}}),
                            100);
  r->load_state(s->state());
  for (double m : {7.25, 7.2}) {
    s->observe_epoch(m);
    r->observe_epoch(m);
  }
  EXPECT_DOUBLE_EQ(s->factor(0, 1), 0.125);
  EXPECT_DOUBLE_EQ(r->factor(0, 1), 0.125);
}

TEST(LrSchedule, PlateauMaxModeAndFloor) {
  auto s = make_lr_schedule(opts({{"lr.schedule", "plateau"},
                                  {"lr.patience", "0"},
                                  {"lr.factor", "0.1"},
                                  {"lr.mode", "max"},
                                  {"lr.min_factor", "0.05"},
                                  {"lr.threshold", "0"}}),
                            100);
  s->observe_epoch(0.5);  // best
  s->observe_epoch(0.6);  // improves (higher is better)
  EXPECT_DOUBLE_EQ(s->factor(0, 1), 1.0);
  s->observe_epoch(0.6);  // no improvement, patience 0 -> reduce
  EXPECT_DOUBLE_EQ(s->factor(0, 1), 0.1);
  s->observe_epoch(0.55);
  EXPECT_DOUBLE_EQ(s->factor(0, 1), 0.05);  // floored
}

TEST(LrSchedule, ErrorsNameTheOption) {
  auto expect_error = [](const Options& o, int64_t total, const char* needle) {
    try {
      make_lr_schedule(o, total);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(opts({{"lr.schedule", "linear-ish"}}), 10, "linear-ish");
  expect_error(opts({{"lr.schedule", "multistep"}, {"lr.milestones", "30,x"}}), 10,
               "lr.milestones");
  expect_error(opts({{"lr.schedule", "multistep"}, {"lr.milestones", "60,30"}}), 10,
               "lr.milestones");
  expect_error(opts({{"lr.schedule", "cosine"}}), 0, "total");
  expect_error(opts({{"lr.schedule", "step"}, {"lr.step_size", "0"}}), 10, "lr.step_size");
  expect_error(opts({{"lr.warmup_epochs", "-1"}}), 10, "lr.warmup_epochs");
  auto s = make_lr_schedule(Options{}, 10);
  EXPECT_THROW(s->factor(3, 0), Error);
}

TEST(PlateauDetector, ScriptedSequence) {
  PlateauDetector d(0.05, 2);
  // 1.0 best; 0.97, 0.96 are within 5% -> fires on the 2nd bad epoch and resets; 0.90 improves;
  // 0.89 bad; 0.80 improves (< 0.855); 0.79, 0.78 bad -> fires.
  const std::vector<double> m = {1.0, 0.97, 0.96, 0.90, 0.89, 0.80, 0.79, 0.78};
  const std::vector<bool> fired = {false, false, true, false, false, false, false, true};
  const std::vector<int> bad = {0, 1, 0, 0, 1, 0, 1, 0};
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(d.observe(m[i]), fired[i]) << "epoch " << i;
    EXPECT_EQ(d.bad_epochs(), bad[i]) << "epoch " << i;
  }
  EXPECT_DOUBLE_EQ(d.best(), 0.80);
}

TEST(PlateauDetector, NegativeMetricsUseRelativeMagnitude) {
  PlateauDetector d(0.1, 1);
  EXPECT_FALSE(d.observe(-1.0));
  EXPECT_FALSE(d.observe(-1.2));  // below -1 - 0.1: improvement
  EXPECT_DOUBLE_EQ(d.best(), -1.2);
  EXPECT_TRUE(d.observe(-1.25));  // not below -1.32
  EXPECT_THROW(d.observe(NAN), Error);
}

}  // namespace
}  // namespace dplab
