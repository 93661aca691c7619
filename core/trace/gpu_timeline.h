// GPU tracks of a trace (tids 4 and 5): spans measured with CUDA events on the compute and
// communication streams, read back in one go (resolve) instead of a host synchronisation per
// event. Built only with the CUDA backend (core/cuda/gpu_timeline.cpp); make_gpu_timeline
// returns null for a CPU device or a build without CUDA.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dplab/core/device.h"

namespace dplab::trace {

// One span read back: microseconds on the host axis (since the tracer's origin).
struct GpuSpan {
  std::string name;
  const char* cat = "";
  int tid = 0;
  int64_t step = -1;
  double ts_us = 0, dur_us = 0;
};

class GpuTimeline {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~GpuTimeline() = default;
  // Opens a span on the compute stream (tid 4) or the comm stream (tid 5): records a start
  // event there. Returns its handle for end(). Any thread.
  virtual int begin(int tid) = 0;
  // Opens a span on the comm stream that starts when the communication posted next can start:
  // the comm stream first waits (on the device) for the compute stream's work enqueued so far,
  // as every NCCL post does, and the start event is recorded after that wait. So the span holds
  // the operation only, not the comm stream's wait for its inputs (issue #19, item 3). Any thread.
  virtual int begin_comm_after_compute() = 0;
  // Closes the span `handle` (records the end event on the same stream).
  virtual void end(int handle, std::string name, const char* cat, int64_t step) = 0;
  // Spans begun but not yet read back (resolve() is due when this grows large).
  virtual size_t pending() const = 0;
  // Waits for the last recorded event (one synchronisation), then hands every closed span to
  // `emit` on the host axis: origin = the host time `origin` of the tracer.
  virtual void resolve(Clock::time_point origin,
                       const std::function<void(const GpuSpan&)>& emit) = 0;
};

// Null unless `device` is a CUDA device of a CUDA build. Creating it synchronises once (to
// anchor the device clock on the host axis).
std::unique_ptr<GpuTimeline> make_gpu_timeline(Device device);

}  // namespace dplab::trace
