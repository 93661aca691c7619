// Where each step's time goes, from a trace (docs/trace_summary.md has every formula): per rank
// the means over the window's steps, then the mean over ranks, the slowest rank and the skew.
// Everything here is in microseconds and bytes; printing converts.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

#include "dplab/tools/trace/trace_file.h"

namespace dplab::trace {

// One GradSync bucket (index K): means over the events of that bucket in the window's steps.
struct BucketFigures {
  int bucket = 0;
  int events = 0;            // how many allreduces of this bucket were averaged
  double delay_us = 0;       // ready-to-launch delay: ts - args.ready_us
  double duration_us = 0;    // dur
  double bytes = 0;          // args.bytes
  double bandwidth_Bps = 0;  // bytes / duration (ratio of the means), bytes per second
};

// Per-step means over a set of steps (one rank's, or the mean over ranks of those).
struct StepFigures {
  int steps = 0;  // steps averaged (one rank: its step events; over ranks: ranks' mean)
  double step_us = 0, forward_us = 0, backward_us = 0, optimizer_us = 0;
  double compute_us = 0;  // forward + backward + optimizer
  double data_wait_us = 0;
  double in_flight_us = 0;  // union of the step's comm events
  double exposed_us = 0;    // sum of the step's wait events
  // 1 - exposed / in flight; empty ("n/a") when no communication was in flight.
  std::optional<double> overlap;
  std::vector<BucketFigures> buckets;  // by bucket index
};

struct RankFigures {
  int rank = 0;
  std::string name;  // process name, "rank R (node K, HOST)"
  StepFigures f;
  long first_step = 0, last_step = 0;  // the global steps found on this rank
  int incomplete_events = 0;  // events of steps without a step event (a stopped run's last)
};

struct TraceSummary {
  std::vector<std::string> files;
  bool from_rank_files = false;
  std::vector<std::string> unfinished;  // per-rank files of a run that did not finish
  std::string window;                   // otherData.steps
  int world_size = 0;                   // otherData.world_size
  int steps_found = 0;                  // distinct global steps with a step event on any rank
  long first_step = 0, last_step = 0;
  std::vector<RankFigures> ranks;  // ranks with at least one step, by rank
  StepFigures mean;                // mean over those ranks
  int slowest_rank = 0;            // largest mean step time
  double skew = 0;                 // (slowest - fastest) / mean over ranks, of mean step time
};

// Throws dplab::Error when the trace holds no step event (an empty window).
TraceSummary summarize(const TraceData& trace);

// Length of the union of the intervals [ts, ts + dur) (overlapping communication counted once).
double union_length_us(std::vector<std::pair<double, double>> intervals);

// The summary as printed by `dplab trace` (ms, MB, GB/s, every figure labelled).
std::string format_summary(const TraceSummary& s);
// The same numbers as one JSON object (`dplab trace --json`, keys in docs/trace_summary.md).
nlohmann::json summary_json(const TraceSummary& s);

}  // namespace dplab::trace
