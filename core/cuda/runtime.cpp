// Device queries for the CUDA build. A machine without a driver or device reports why, so tests
// can skip with a reason instead of failing.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "dplab/core/cuda/check.h"
#include "dplab/core/device.h"
#include "dplab/core/device_probe.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {
struct Probe {
  int count = 0;
  bool failed = false;  // a broken driver, not a missing device (core/device_probe.h)
  std::string reason;
};
// Whether the NVIDIA driver library is installed (loadable); the handle is released at once.
bool driver_installed() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}
Probe probe() {
  Probe p;
  cudaError_t e = cudaGetDeviceCount(&p.count);
  if (e != cudaSuccess) cudaGetLastError();  // clear the error record (see event.cpp)
  const CudaProbeOutcome outcome = classify_cuda_probe(
      e == cudaSuccess, p.count, e == cudaErrorNoDevice || e == cudaErrorStubLibrary,
      e == cudaSuccess || driver_installed());
  if (outcome == CudaProbeOutcome::available) return p;
  p.count = 0;
  if (e == cudaSuccess) {
    p.reason = "no CUDA device: cudaGetDeviceCount reports 0 devices";
  } else if (outcome == CudaProbeOutcome::no_device) {
    p.reason = fmt::format(
        "no CUDA device: cudaGetDeviceCount failed with {} ({}){}", cudaGetErrorName(e),
        cudaGetErrorString(e),
        driver_installed() ? "" : "; the NVIDIA driver (libcuda.so.1) is not installed");
  } else {
    p.failed = true;
    p.reason = fmt::format(
        "CUDA driver failure: cudaGetDeviceCount failed with {} ({}) although the NVIDIA driver "
        "(libcuda.so.1) is installed",
        cudaGetErrorName(e), cudaGetErrorString(e));
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
bool cuda_probe_failed() {
  return cached_probe().failed;
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
