// Stopwatch: a duration an algorithm measures or acts on, on the run's time base
// (TrainContext::time, core/time_source.h; docs/virtual_cluster.md "One time base"). Without a
// virtual cluster that is the wall clock; with one, the rank's virtual clock, so CommStats' in
// flight and exposed wait, Oscars' step times and DASO's and DC-S3GD's statistics are modelled
// time and do not depend on how loaded the host is. Liveness timeouts do not use this: they
// stay on steady_clock (comm/communicator.h, polite_wait).
//
// The same start is kept on the trace's axis (trace_start()), so that an algorithm's trace
// events and its statistics describe one interval: on a virtual trace it is Tracer::at of the
// virtual start, on a wall-clock trace steady_clock at the start.
#pragma once
#include "dplab/core/time_source.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

// The instant on `t`'s axis of `seconds` just read from the run's time source: the same instant
// (Tracer::at) on a virtual trace; steady_clock now on a wall-clock trace (or without a tracer).
inline trace::Clock::time_point trace_instant(const trace::Tracer* t, double seconds) {
  return t != nullptr && t->virtual_time() ? t->at(seconds) : trace::Clock::now();
}

class Stopwatch {
 public:
  // Starts now. `tracer` (may be null) sets trace_start() on its axis.
  explicit Stopwatch(TimeSource& time, const trace::Tracer* tracer = nullptr)
      : time_(&time), t0_(time.now()), trace_t0_(trace_instant(tracer, t0_)) {}
  // Started at `start` seconds of `time` (e.g. a start in the past).
  Stopwatch(TimeSource& time, double start) : time_(&time), t0_(start) {}

  // The start, in seconds of the time source.
  double start() const { return t0_; }
  // Seconds from the start to now on the time source.
  double seconds() const { return time_->now() - t0_; }
  // The start on the trace's axis (steady_clock when no tracer was given).
  trace::Clock::time_point trace_start() const { return trace_t0_; }

 private:
  TimeSource* time_;
  double t0_;
  trace::Clock::time_point trace_t0_{};
};

}  // namespace dplab
