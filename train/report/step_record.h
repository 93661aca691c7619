// `metrics.every_steps = N`: a `"kind": "step"` record every N global steps (docs/
// metrics_schema.md) in OUT/metrics.jsonl (rank 0: global loss and images/s, rank 0's timings)
// and in every OUT/rank_R.jsonl (that rank's own figures).
//
// A record covers its window: the steps since the previous record or since the start of the
// epoch, whichever is later (`window_steps`). Loss is the sample-weighted mean over every rank
// and every step of the window; times are per step (the window's total / window_steps).
// Figures are exchanged through the RankGroup (MPI_COMM_WORLD, never the algorithm's
// communicator): every rank calls step_done() at every global step, so the exchange happens at
// the same step everywhere. Off (N = 0), nothing is measured or exchanged.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>

#include "dplab/comm/strategy.h"
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/report/metrics.h"
#include "dplab/train/report/step_metrics.h"
#include "dplab/train/state/checkpoint.h"
#include "dplab/train/virtual/run_clock.h"

namespace dplab {

// The algorithm's communication statistics, taken by windows (step records) without losing
// any from the epoch's totals: Strategy::take_stats() resets them. An epoch's figures cover the
// same window as its time_s, the training iterations: communication outside them (the set-up
// broadcast, the drain and buffer averaging before an evaluation, the final averaging) is set
// aside into a run total of its own, so an epoch's exposed wait never exceeds its time.
class CommTally {
 public:
  // Since the previous take (also counted in the epoch's total).
  CommStats window(Strategy& s);
  // The epoch's total: every window taken since the previous epoch() plus what is left.
  CommStats epoch(Strategy& s);
  // Since the previous take, outside any epoch's iterations: counted in outside() only.
  void set_aside(Strategy& s);
  const CommStats& outside() const { return outside_; }

 private:
  CommStats epoch_;
  CommStats outside_;
};

class StepLog {
 public:
  // `clock`: the run's time base; `run_start` the run's start on it (elapsed_s).
  StepLog(int64_t every_steps, const RankGroup& ranks, MetricsWriter& metrics,
          MetricsWriter& rank_metrics, const RunClock& clock, RunClock::Mark run_start);
  bool enabled() const { return every_ > 0; }
  // The epoch's first batch is about to be fetched: a new window.
  // Communication since the previous epoch must have been set aside (CommTally::set_aside).
  void begin_epoch(const LoopState& loop);
  // The step's batch arrived (the data wait of this step ends).
  void batch_ready();
  // Runs `fetch` (data work inside the step: the next batch's upload, BatchPrefetch) and counts
  // its time as data wait.
  void count_data_wait(const std::function<void()>& fetch);
  // A global step is done (also one this rank skipped: `images` 0); loop.global_step counts
  // it. Collective every N steps: flushes `sm` into the loop's sums and writes the records.
  void step_done(LoopState& loop, int64_t images, double lr, StepMetrics& sm, Strategy& s,
                 CommTally& tally);

 private:
  void start_window(const LoopState& loop);
  int64_t every_;
  const RankGroup& ranks_;
  MetricsWriter& metrics_;
  MetricsWriter& rank_metrics_;
  const RunClock& clock_;
  RunClock::Mark run_start_;
  // The window: where it started, and the loop's loss sums then.
  RunClock::Mark window_start_, last_mark_;
  int64_t window_steps_ = 0, window_images_ = 0;
  double data_wait_s_ = 0;
  double loss_sum0_ = 0;
  int64_t seen0_ = 0;
};

}  // namespace dplab
