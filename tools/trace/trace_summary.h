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

// One communication operation: the `comm` events of one name (a GradSync bucket's are named
// "allreduce bucket K"; the built-in algorithms' and an experiment's are named after the
// operation: "outer gradient", "broadcast", "daso global sync", ...). Per call: means over the
// operation's events; per step: totals over the window's steps divided by their number.
struct OperationFigures {
  std::string name;
  int bucket = -1;  // K for a GradSync bucket ("allreduce bucket K"), -1 otherwise
  // The calls averaged: on a rank its events; over ranks the sum of the ranks' events.
  int events = 0;
  double calls = 0;           // a rank's events; over ranks: the mean over those that have it
  double calls_per_step = 0;  // events / steps (outside the steps: 0)
  double duration_us = 0;     // in flight per call: mean dur (post to completion)
  double total_us = 0;        // in flight, all calls: sum of dur (over ranks: the mean)
  double per_step_us = 0;     // total_us / steps (outside the steps: 0)
  // Per call: args.bytes (the payload handed to the communicator) and args.wire_bytes (what the
  // rank put on its links, comm/wire_bytes.h); empty ("n/a") when an event lacks it (a trace
  // written before wire bytes were recorded: nothing is invented).
  std::optional<double> bytes, wire_bytes;
  std::optional<double> delay_us;       // buckets: ready-to-launch delay, ts - args.ready_us
  std::optional<double> bandwidth_Bps;  // wire bytes / duration (ratio of the means), bytes/s
};

// Communication outside the steps (no args.step: what completed at the end of an epoch, after
// its last step: the algorithm's end-of-epoch work, the drain, evaluation; metrics.jsonl counts
// it in the final record's comm_outside_epochs_*): totals, not per-step means.
struct OutsideFigures {
  std::vector<OperationFigures> operations;  // per_step_us and calls_per_step 0
  double exposed_us = 0;                     // sum of its `wait` events
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
  // Every communication operation of the steps: GradSync's buckets by index, then the others by
  // name.
  std::vector<OperationFigures> operations;
  OutsideFigures outside;
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
  std::string time_base = "wall";       // TraceData::time_base: "wall" or "virtual..."
  bool virtual_time() const { return time_base.starts_with("virtual"); }
  int world_size = 0;   // otherData.world_size
  int steps_found = 0;  // distinct global steps with a step event on any rank
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
