// CommStreamScope on CUDA devices (core/comm_stream_scope.h); the CPU's scope does nothing.
#include "dplab/core/comm_stream_scope.h"

#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/event.h"
#include "dplab/core/cuda/stream.h"

namespace dplab {

struct ComputeMark::Impl {
  explicit Impl(int device) : event(device) {}
  cuda::Event event;
};

ComputeMark::ComputeMark(Device device) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.index);
}
ComputeMark::~ComputeMark() = default;

void ComputeMark::record() {
  if (!impl_) return;
  cuda::ScopedDevice on(impl_->event.device());
  impl_->event.record(cuda::compute_stream(impl_->event.device()));
}

CommStreamScope::CommStreamScope(Device device, const ComputeMark* after) {
  if (!device.is_cuda()) return;
  const cudaEvent_t mark = after && after->impl_ ? after->impl_->event.get() : nullptr;
  previous_ = cuda::enter_comm_scope(device.index, mark);
  active_ = true;
}

CommStreamScope::~CommStreamScope() {
  if (active_) cuda::leave_comm_scope(previous_);
}

void order_compute_after_comm(Device device) {
  if (device.is_cuda()) cuda::order_compute_after_comm(device.index);
}

}  // namespace dplab
