// Device queries for the CUDA build. A machine without a driver or device reports why, so tests
// can skip with a reason instead of failing.
#include <cuda_runtime.h>

#include "dplab/core/device.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {
struct Probe {
  int count = 0;
  std::string reason;
};
Probe probe() {
  Probe p;
  cudaError_t e = cudaGetDeviceCount(&p.count);
  if (e != cudaSuccess) {
    p.count = 0;
    p.reason = fmt::format("no CUDA device: cudaGetDeviceCount failed with {} ({})",
                           cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();  // clear the sticky error
  } else if (p.count == 0) {
    p.reason = "no CUDA device: cudaGetDeviceCount reports 0 devices";
  }
  return p;
}
const Probe& cached_probe() {
  static const Probe p = probe();  // immutable after first use
  return p;
}
}  // namespace

bool cuda_available() {
  return cached_probe().count > 0;
}
int cuda_device_count() {
  return cached_probe().count;
}
std::string cuda_unavailable_reason() {
  return cached_probe().reason;
}

}  // namespace dplab
