// Device queries for the CUDA build. A machine without a driver or device reports why, so tests
// can skip with a reason instead of failing.
#include <cuda_runtime.h>

#include "dplab/core/cuda/check.h"
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

void use_device(Device d) {
  if (d.is_cpu()) return;
  DPLAB_CHECK(cuda_available(), "cannot use {}: {}", d.str(), cuda_unavailable_reason());
  DPLAB_CHECK(d.index >= 0 && d.index < cuda_device_count(),
              "cannot use {}: only {} CUDA device(s)", d.str(), cuda_device_count());
  int cur = -1;
  DPLAB_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != d.index) DPLAB_CUDA_CHECK(cudaSetDevice(d.index));
}

}  // namespace dplab
