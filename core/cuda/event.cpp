#include "dplab/core/cuda/event.h"

#include <utility>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream_wait.h"

namespace dplab::cuda {

Event::Event(int device) : device_(device) {
  ScopedDevice on(device);
  DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

Event::~Event() {
  // cudaEventDestroy on an event whose work is still pending is allowed: the driver releases it
  // once the work completes, so destroying never waits. Errors cannot be thrown from here.
  if (event_) cudaEventDestroy(event_);
}

Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
  }
  return *this;
}

void Event::record(cudaStream_t stream) {
  DPLAB_CHECK(event_ != nullptr, "cuda::Event::record on a moved-from event");
  DPLAB_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::make_wait(cudaStream_t stream) const {
  DPLAB_CHECK(event_ != nullptr, "cuda::Event::make_wait on a moved-from event");
  DPLAB_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

bool Event::query() const {
  DPLAB_CHECK(event_ != nullptr, "cuda::Event::query on a moved-from event");
  const cudaError_t e = cudaEventQuery(event_);
  if (e == cudaErrorNotReady) {
    // Not an error (driver_types.h: "This result is not actually an error"), but the runtime
    // keeps it as the thread's last error, and the kernel launchers return the last error: the
    // next launch on this thread would throw cudaErrorNotReady (issue #19, item 1). Clear it,
    // as PyTorch's CUDAEvent::query does.
    (void)cudaGetLastError();
    return false;
  }
  DPLAB_CUDA_CHECK(e);
  return true;
}

void Event::synchronize() const {
  DPLAB_CHECK(event_ != nullptr, "cuda::Event::synchronize on a moved-from event");
  wait_event(event_, "cuda::Event::synchronize");
}

}  // namespace dplab::cuda
