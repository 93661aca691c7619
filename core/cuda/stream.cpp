#include "dplab/core/cuda/stream.h"

#include <array>
#include <mutex>

#include "dplab/core/cuda/check.h"

namespace dplab::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceStreams {
  std::once_flag once;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
};

DeviceStreams& streams_of(int device) {
  DPLAB_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index {} out of range [0, {})",
              device, kMaxDevices);
  // One slot per device, created on first use; the streams themselves never change after.
  static std::array<DeviceStreams, kMaxDevices> all;
  DeviceStreams& s = all[device];
  std::call_once(s.once, [&] {
    int prev = 0;
    DPLAB_CUDA_CHECK(cudaGetDevice(&prev));
    DPLAB_CUDA_CHECK(cudaSetDevice(device));
    DPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    DPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.comm, cudaStreamNonBlocking));
    DPLAB_CUDA_CHECK(cudaSetDevice(prev));
  });
  return s;
}

}  // namespace

cudaStream_t compute_stream(int device) {
  return streams_of(device).compute;
}
cudaStream_t comm_stream(int device) {
  return streams_of(device).comm;
}

}  // namespace dplab::cuda
