// The records of docs/metrics_schema.md that close an epoch and a run: `"kind": "epoch"` and
// `"kind": "final"` in OUT/metrics.jsonl (rank 0), `"kind": "rank_epoch"` in OUT/rank_R.jsonl
// (every rank, runs of more than one rank), and the epoch's console line.
//
// Global figures are over every rank: each rank's counts and times are exchanged through the
// RankGroup (an allgather of short strings on MPI_COMM_WORLD, never the algorithm's
// communicator, so no communication the algorithms order is disturbed) and combined in rank
// order in double, so every rank computes the same global numbers.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "dplab/comm/strategy.h"
#include "dplab/train/data/evaluate.h"
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/report/metrics.h"
#include "dplab/train/report/thread_usage.h"
#include "dplab/train/virtual/run_clock.h"

namespace dplab {

// One rank's training iterations in one epoch (this process's part of it, after a resume).
struct RankEpoch {
  int64_t images = 0;   // samples of every computed step (dropped non-finite steps included)
  int64_t samples = 0;  // samples in loss and accuracy (dropped non-finite steps excluded)
  double loss_sum = 0;  // sum of per-sample loss over `samples`
  int64_t correct = 0;  // correct top-1 predictions among `samples`
  double time_s = 0;    // this rank's time of the epoch's training iterations (the run's time base)
  double wall_s = 0;    // the same in wall-clock time (== time_s without a virtual cluster)
  ThreadUsage usage{};  // the training thread's kernel counts over the epoch (this rank's only)
};

// Every rank's RankEpoch combined: sums of the counts, the slowest rank's time.
struct GlobalEpoch {
  int ranks = 1;
  int64_t images = 0, samples = 0, correct = 0;
  double loss_sum = 0;
  double time_s = 0;  // max over ranks: the epoch lasts until its slowest rank is done
  double wall_s = 0;  // max over ranks, wall-clock time
  double images_per_s() const { return time_s > 0 ? double(images) / time_s : 0; }
  double loss() const { return samples ? loss_sum / double(samples) : 0; }
  double train_acc() const { return samples ? double(correct) / double(samples) : 0; }
};
GlobalEpoch combine_epochs(const std::vector<RankEpoch>& per_rank);
// Every rank's RankEpoch in rank order (collective over `ranks`).
std::vector<RankEpoch> gather_epochs(const RankGroup& ranks, const RankEpoch& mine);

// What the training loop knows at the end of an epoch (after its evaluation).
struct EpochFacts {
  int64_t epoch = 0;   // 1-based
  int64_t epochs = 0;  // of the run
  bool complete = true;
  int64_t step = 0;  // global steps done
  RankEpoch mine;
  int64_t computed_steps = 0;
  double lr = 0;
  CommStats comm;  // this rank's, for the epoch
  // The two evaluated models (docs/metrics_schema.md, "Evaluated models"): the run's model (the
  // one a user would take away: Strategy::with_run_model) and rank 0's own model.
  EvalResult ev;
  EvalResult ev_rank0;
  bool rank0_separate = false;  // rank 0's own model is not the run's model (evaluated apart)
  std::map<std::string, double> algo_state;
  int64_t nonfinite_skipped = 0;  // this rank's, in the epoch
  double slowdown = 1, slowdown_sleep_s = 0;
};

// The run's end (the final models' evaluations).
struct FinalFacts {
  int64_t epoch = 0;  // 1-based number of the last epoch trained (0: none in this process)
  int64_t epochs_completed = 0;
  int64_t step = 0;
  double test_loss = 0, test_acc = 0, test_acc5 = -1;  // the run's model; acc5 < 0: not counted
  double test_loss_rank0 = 0, test_acc_rank0 = 0, test_acc5_rank0 = -1;  // rank 0's own model
  int64_t nonfinite_skipped = 0;
  CommStats comm_outside;  // rank 0's communication outside every epoch's iterations
  // Fail events under an algorithm that goes on with the live ranks (train/virtual/liveness.h):
  // rank-seconds of virtual time the down ranks were down for, and the heals' total time.
  bool failures = false;
  double failure_lost_rank_s = 0;
  double recovery_s = 0;
};

class RunReport {
 public:
  // `metrics` is rank 0's metrics.jsonl (disabled elsewhere), `rank_metrics` this rank's
  // rank_R.jsonl (disabled in one-rank runs); `clock` the run's time base and `start` the run's
  // start on it (elapsed_s).
  RunReport(const RankGroup& ranks, MetricsWriter& metrics, MetricsWriter& rank_metrics,
            const RunClock& clock, RunClock::Mark start);
  // Collective: writes the epoch's records and, on rank 0, its line to `summary`; returns the
  // global figures (every rank gets the same).
  GlobalEpoch epoch(const EpochFacts& f, std::ostream& summary);
  // Rank 0: the final record. Totals over every epoch this process trained.
  void final(const FinalFacts& f);
  const GlobalEpoch& last() const { return last_; }
  // All ranks' images over the sum of the epochs' times (0 before any epoch).
  double total_images_per_s() const;

 private:
  const RankGroup& ranks_;
  MetricsWriter& metrics_;
  MetricsWriter& rank_metrics_;
  const RunClock& clock_;
  RunClock::Mark start_;
  GlobalEpoch last_;
  int64_t total_images_ = 0, total_images_rank_ = 0;
  double total_train_time_s_ = 0, total_train_time_rank_s_ = 0, total_train_wall_s_ = 0;
};

// 12204.3 -> "12,204": a rate for the console, rounded to a whole number, digits grouped.
std::string grouped_rate(double v);

// Seconds for the console: 3 significant digits below 10 s (0.04677 -> "0.0468", 2.346 ->
// "2.35"), one decimal from 10 s on (123.46 -> "123.5"). A virtual epoch of a fast platform
// lasts hundredths of a second, which "{:.1f}" would print as 0.0.
std::string seconds_text(double s);

}  // namespace dplab
