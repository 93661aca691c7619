// StepLog::count_data_wait (train/report/step_record.h): data work done inside a step (the CUDA
// batch upload that BatchPrefetch runs after backward, train/loop/step_observers.h) counts in the
// step record's data_wait_s, beside the wait for the step's batch; compute between them does
// not. The CPU loop never uploads, so this is the accounting's test on every machine. Sleeps
// never return early and both figures come from one clock, so the bounds below hold on any host,
// however loaded: the data figures are at least their sleeps, and the step's time exceeds its
// data wait by at least the compute sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "data/temp_dir.h"
#include "dplab/comm/strategy.h"
#include "dplab/train/report/metrics.h"
#include "dplab/train/report/step_metrics.h"
#include "dplab/train/report/step_record.h"

namespace dplab {
namespace {

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The rank record of a one-step window: {data_wait_s, step_time_s}, after `step` ran inside it.
template <typename Step>
std::pair<double, double> one_step(const std::string& dir, Step step) {
  MetricsWriter metrics(dir + "/metrics.jsonl", false), rank(dir + "/rank.jsonl", false);
  const RunClock clock;
  const RankGroup ranks(0, 1);
  StepLog log(1, ranks, metrics, rank, clock, clock.now());
  LoopState loop;
  StepMetrics sums(Device::cpu());  // nothing added: the window's sums stay 0
  LocalStrategy strategy;
  CommTally tally;
  log.begin_epoch(loop);
  step(log);
  loop.global_step = 1;
  log.step_done(loop, 8, 0.1, sums, strategy, tally);
  std::ifstream in(dir + "/rank.jsonl");
  std::string line;
  std::getline(in, line);
  const nlohmann::json r = nlohmann::json::parse(line);
  return {r["data_wait_s"].get<double>(), r["step_time_s"].get<double>()};
}

TEST(StepLog, DataWorkInsideAStepCountsAsDataWait) {
  test::ScopedTempDir dir("step-log");
  // 20 ms waiting for the batch, 10 ms of compute, 30 ms of data work through count_data_wait.
  const auto [wait, time] = one_step(dir.path.string(), [](StepLog& log) {
    sleep_ms(20);
    log.batch_ready();
    sleep_ms(10);
    log.count_data_wait([] { sleep_ms(30); });
  });
  EXPECT_GE(wait, 0.050);
  EXPECT_LE(wait, time - 0.010) << "the compute between them counted as data wait";
}

TEST(StepLog, DataWorkOutsideCountDataWaitIsNotDataWait) {
  test::ScopedTempDir dir("step-log-plain");
  // The same step with the 30 ms done directly: only the batch's 20 ms is data wait.
  const auto [wait, time] = one_step(dir.path.string(), [](StepLog& log) {
    sleep_ms(20);
    log.batch_ready();
    sleep_ms(10);
    sleep_ms(30);
  });
  EXPECT_GE(wait, 0.020);
  EXPECT_LE(wait, time - 0.040);
}

}  // namespace
}  // namespace dplab
