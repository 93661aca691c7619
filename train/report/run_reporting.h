// What a run reports, in one place: rank 0's OUT/metrics.jsonl and every rank's
// OUT/rank_R.jsonl (several ranks), the epoch and final records over every rank
// (train/report/epoch_record.h), the step records (train/report/step_record.h), the algorithm's
// communication statistics taken by windows, rank 0's progress line, and the summary stream
// (stdout in `dplab train`) with the stream for progress and warnings (stderr).
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "dplab/train/loop/rank_group.h"
#include "dplab/train/report/epoch_record.h"
#include "dplab/train/report/metrics.h"
#include "dplab/train/report/progress.h"
#include "dplab/train/report/step_record.h"
#include "dplab/train/virtual/run_clock.h"

namespace dplab {

struct ReportingOptions {
  std::string out_dir;              // empty: no files
  bool append = false;              // a resumed run continues its predecessor's files
  int64_t metrics_every_steps = 0;  // option metrics.every_steps (0: no step records)
  Progress::Mode progress = Progress::Mode::off;
  int every_percent = 10;  // option progress.every_percent
};

class RunReporting {
 public:
  // `clock`: the run's time base (the wall clock, or a virtual cluster's clock), kept here;
  // `origin`: the run's start on it for elapsed_s (earlier than this process's start when the
  // run was resumed: the time its predecessors trained, see LoopState::elapsed_s).
  RunReporting(const ReportingOptions& o, const RankGroup& ranks, RunClock clock,
               RunClock::Mark origin, std::ostream& summary, std::ostream& progress);
  RunReporting(const RunReporting&) = delete;
  RunReporting& operator=(const RunReporting&) = delete;

  // Seconds since the run's start on the time base, resumed processes' training included.
  double elapsed_s() const;
  const RunClock& clock() const { return clock_; }
  MetricsWriter& metrics() { return metrics_; }  // rank 0's metrics.jsonl
  RunReport& report() { return report_; }
  StepLog& step_log() { return step_log_; }
  CommTally& comm_tally() { return comm_tally_; }
  Progress& progress() { return progress_; }
  std::ostream& summary() { return summary_; }
  std::ostream& messages() { return messages_; }  // progress and warnings (stderr)

 private:
  RunClock clock_;
  RunClock::Mark origin_;
  MetricsWriter metrics_;
  MetricsWriter rank_metrics_;  // this rank's own timing (idle fraction) in OUT/rank_R.jsonl
  RunReport report_;
  CommTally comm_tally_;
  StepLog step_log_;
  Progress progress_;
  std::ostream& summary_;
  std::ostream& messages_;
};

}  // namespace dplab
