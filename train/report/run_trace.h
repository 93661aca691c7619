// The training run's timeline (options trace, trace.steps; docs/trace.md): creating the
// tracer, aligning every rank's clock, the per-step events of the loop, and merging the
// ranks' files at the end. The events themselves are recorded by core/trace/tracer.h.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "dplab/core/device.h"
#include "dplab/core/options.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

class RankGroup;
class DeviceBatches;
struct Batch;

// Reads options trace and trace.steps (checked on every run, tracing or not). Null when trace
// is false. Tracing needs an output directory (`out`).
std::unique_ptr<trace::Tracer> make_run_tracer(const Options& opt, const std::string& out_dir,
                                               Device device);

// Collective over `ranks` (every rank calls it, with or without a tracer: trace is the same
// option on every rank): a barrier, then each rank's time origin, rank, node and host name.
// Node: rank / ranks_per_node when that option is > 0, else the index of the rank's host among
// the distinct hosts in rank order. `total_steps` (global steps the run takes) resolves
// trace.steps = auto.
void start_run_trace(trace::Tracer* tracer, const RankGroup& ranks, const Options& opt,
                     int64_t total_steps);

// Ends this rank's file (a complete JSON document), then, after a barrier, rank 0 merges every
// rank's file into OUT/trace.json. Collective; does nothing without a tracer. `errors`: on a
// run that is stopping anyway (pre-emption, non-finite values), a failure is reported there
// instead of thrown, so the stop keeps its own exit status.
void finish_run_trace(trace::Tracer* tracer, const RankGroup& ranks, const std::string& out_dir,
                      std::ostream* errors = nullptr);

// The loop's per-iteration events: `step` (tid 0) from the request for the batch to end(),
// `data_wait` around the loader.
class StepTrace {
 public:
  explicit StepTrace(trace::Tracer* tracer) : tracer_(tracer) {}
  // Enters global step `step` (Tracer::begin_step) and takes the next batch, timing the wait.
  // `arrived` (may be empty) runs once the batch is there, inside the wait: under a virtual
  // cluster the loader's modelled delay (cluster.data_rate).
  bool next(DeviceBatches& batches, Batch& b, int64_t step,
            const std::function<void(const Batch&)>& arrived = {});
  // The iteration is over (after after_step): the step event. `epoch` 0-based. `live_ranks` > 0
  // (a virtual cluster with fail events, train/virtual/liveness.h): the ranks live in the step,
  // an argument of the event.
  void end(int64_t epoch, int64_t images, int live_ranks = 0);

 private:
  trace::Tracer* tracer_;
  trace::Clock::time_point start_{};
  std::chrono::steady_clock::time_point wall_start_{};  // a virtual trace's step: wall time too
  int64_t step_ = -1;
  bool open_ = false;
};

}  // namespace dplab
