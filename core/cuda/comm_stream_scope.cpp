// CommStreamScope and StreamMark on CUDA devices (core/comm_stream_scope.h); on the CPU they do
// nothing.
#include "dplab/core/comm_stream_scope.h"

#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/event.h"
#include "dplab/core/cuda/stream.h"

namespace dplab {
namespace {

cudaStream_t stream_of(int device, DeviceStream s) {
  return s == DeviceStream::comm ? cuda::comm_stream(device) : cuda::compute_stream(device);
}

}  // namespace

struct StreamMark::Impl {
  Impl(int device, DeviceStream s) : event(device), stream(s) {}
  cuda::Event event;
  DeviceStream stream;
};

StreamMark::StreamMark(Device device, DeviceStream stream) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.index, stream);
}
StreamMark::~StreamMark() = default;

void StreamMark::record() {
  if (!impl_) return;
  const int d = impl_->event.device();
  cuda::ScopedDevice on(d);
  impl_->event.record(stream_of(d, impl_->stream));
}

void StreamMark::make_wait(DeviceStream waiter) const {
  if (!impl_) return;
  const int d = impl_->event.device();
  cuda::ScopedDevice on(d);
  impl_->event.make_wait(stream_of(d, waiter));
}

CommStreamScope::CommStreamScope(Device device, const StreamMark* after) {
  if (!device.is_cuda()) return;
  DPLAB_CHECK(!after || !after->impl_ || after->impl_->stream == DeviceStream::compute,
              "CommStreamScope: the mark to wait for must be one of the compute stream");
  const cudaEvent_t mark = after && after->impl_ ? after->impl_->event.get() : nullptr;
  previous_ = cuda::enter_comm_scope(device.index, mark);
  active_ = true;
}

CommStreamScope::~CommStreamScope() {
  if (active_) cuda::leave_comm_scope(previous_);
}

}  // namespace dplab
