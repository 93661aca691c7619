// The training loop's observers of a step's phases (train/loop/step_phases.h) besides the
// virtual cluster's clock (VirtualRun): the trace's compute spans and --slowdown's timer.
#pragma once
#include <optional>

#include "dplab/comm/slowdown.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/train/data/device_prefetch.h"
#include "dplab/train/loop/step_phases.h"
#include "dplab/train/report/step_record.h"

namespace dplab {

// The forward, backward and optimizer spans of the timeline (with their GPU twins on a device);
// the check is not a span of its own.
class TraceSpans : public StepObserver {
 public:
  explicit TraceSpans(trace::Tracer* tracer) : tracer_(tracer) {}
  void begin(StepPhase phase) override;
  void end(StepPhase phase, bool stepped) override;

 private:
  trace::Tracer* tracer_;
  std::optional<trace::Span> span_;
};

// --slowdown (comm/slowdown.h): times forward + backward and the optimizer as compute; at the
// optimizer's end it sleeps (FACTOR - 1) x the iteration's compute (under a virtual cluster it
// only counts: the factor multiplies virtual compute there).
class SlowdownTimer : public StepObserver {
 public:
  explicit SlowdownTimer(Slowdown& slowdown) : slowdown_(slowdown) {}
  void begin(StepPhase phase) override;
  void end(StepPhase phase, bool stepped) override;

 private:
  Slowdown& slowdown_;
};

// Uploads the next batch once the step's backward is enqueued (DeviceBatches::prefetch): its
// host work (the loader's batch, the copy into pinned memory) then overlaps the device's
// backward instead of delaying the next forward's first kernel (issue #34). After backward
// rather than forward: a host synchronisation after backward (the loss or the non-finite flag)
// would wait for the device anyway. The time it takes, a wait for the loader included, is the
// step's data wait: a `data_wait` span on the trace and the step records' data_wait_s. Does
// nothing on the CPU (its batches are not uploaded).
class BatchPrefetch : public StepObserver {
 public:
  BatchPrefetch(DeviceBatches& batches, trace::Tracer* tracer, StepLog& log)
      : batches_(batches), tracer_(tracer), log_(log) {}
  void end(StepPhase phase, bool stepped) override;

 private:
  DeviceBatches& batches_;
  trace::Tracer* tracer_;
  StepLog& log_;
};

}  // namespace dplab
