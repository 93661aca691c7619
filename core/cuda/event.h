// A CUDA event owned by one object (created with cudaEventDisableTiming: events here only order
// streams and report completion, and timing-free events are the cheap kind). The NCCL
// communicator uses them to order its communication stream after the compute stream and to tell
// when a collective has finished, without host synchronisation.
#pragma once
#include <cuda_runtime.h>

namespace dplab::cuda {

class Event {
 public:
  // Creates the event on `device` (the current device is restored afterwards).
  explicit Event(int device);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Captures the work enqueued on `stream` so far (stream must be on this event's device).
  void record(cudaStream_t stream);
  // Makes `stream` wait, on the device, for the last record(); the host does not block.
  void make_wait(cudaStream_t stream) const;
  // True once the captured work has completed (true before any record); throws on a CUDA error.
  bool query() const;
  // Blocks the host until the captured work has completed, with comm.timeout_s (stream_wait.h).
  void synchronize() const;

  cudaEvent_t get() const { return event_; }
  int device() const { return device_; }

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = 0;
};

}  // namespace dplab::cuda
