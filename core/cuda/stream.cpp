#include "dplab/core/cuda/stream.h"

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
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

}  // namespace

cudaStream_t compute_stream(int device) {
  return streams_of(device).compute;
}
cudaStream_t comm_stream(int device) {
  return streams_of(device).comm;
}

}  // namespace dplab::cuda
