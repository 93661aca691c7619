#include "dplab/core/cuda/stream.h"

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/event.h"
#include "dplab/core/cuda/per_device.h"

namespace dplab::cuda {
namespace {

struct DeviceStreams {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
};

const DeviceStreams& streams_of(int device) {
  static PerDevice<DeviceStreams> all;
  return all.get(device, "CUDA streams", [&] {
    ScopedDevice guard(device);
    DeviceStreams s;
    DPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    DPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.comm, cudaStreamNonBlocking));
    return s;
  });
}

// The device whose launches this thread sends to the comm stream (-1: none). Per thread, as
// PyTorch's current stream: GradSync's communication thread holds a scope while the training
// thread keeps launching backward on the compute stream.
thread_local int t_comm_scope_device = -1;

// `later` waits, on the device, for the work enqueued on `earlier` so far.
void order(int device, cudaStream_t earlier, cudaStream_t later) {
  Event e(device);
  e.record(earlier);
  e.make_wait(later);
}

}  // namespace

cudaStream_t compute_stream(int device) {
  return streams_of(device).compute;
}
cudaStream_t comm_stream(int device) {
  return streams_of(device).comm;
}

bool in_comm_scope(int device) {
  return t_comm_scope_device == device;
}

cudaStream_t launch_stream(int device) {
  return in_comm_scope(device) ? comm_stream(device) : compute_stream(device);
}

void refuse_in_comm_scope(int device, const char* library) {
  DPLAB_CHECK(!in_comm_scope(device),
              "{} on cuda:{} inside a CommStreamScope (core/comm_stream_scope.h): its handle runs "
              "on the compute stream, which the scope's work on the comm stream is not ordered "
              "with; call it outside the scope (a bucket reducer that needs it keeps "
              "stage_kernels_on_comm_stream() false)",
              library, device);
}

int enter_comm_scope(int device, cudaEvent_t after) {
  ScopedDevice on(device);
  if (after)
    DPLAB_CUDA_CHECK(cudaStreamWaitEvent(comm_stream(device), after, 0));
  else
    order(device, compute_stream(device), comm_stream(device));
  const int previous = t_comm_scope_device;
  t_comm_scope_device = device;
  return previous;
}

void leave_comm_scope(int previous) {
  t_comm_scope_device = previous;
}

}  // namespace dplab::cuda
