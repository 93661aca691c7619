// The training loop's observers of a step's phases (train/loop/step_phases.h) besides the
// virtual cluster's clock (VirtualRun): the trace's compute spans and --slowdown's timer.
#pragma once
#include <optional>

#include "dplab/comm/slowdown.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/train/loop/step_phases.h"

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

}  // namespace dplab
