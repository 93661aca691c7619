#include "common/cuda_gate.h"

#include <cstdlib>
#include <cstring>

#include "dplab/core/device.h"

namespace dplab::test {
namespace {

// Every test binary that can touch CUDA links this file (the gate). CUDA's lazy module loading
// (the default since CUDA 12.2) loads a kernel's module at its first launch, and that load waits
// for the device: a test holding a stream with a host function, then launching a kernel not yet
// loaded, deadlocks (issue #31). So the tests load every module when the context is created:
// CUDA_MODULE_LOADING=EAGER, set before anything initialises CUDA (a static initialiser) unless
// the caller chose a value. device-check.sh exports it too.
const bool kEagerModules = [] {
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  return true;
}();

}  // namespace

const char* cuda_module_loading() {
  (void)kEagerModules;
  return std::getenv("CUDA_MODULE_LOADING");
}

CudaGateDecision decide_cuda_gate(bool available, bool probe_failed, const std::string& reason,
                                  bool require) {
  if (available) return {CudaGate::run, {}};
  if (probe_failed) return {CudaGate::fail, reason};
  // The failure text must not contain the NCCL tests' ctest skip marker ("no CUDA device" is
  // in `reason`), so it is quoted after a prefix that says what was required.
  if (require)
    return {CudaGate::fail,
            "DPLAB_REQUIRE_CUDA=1: this test must run on a CUDA device, but the device probe "
            "says: " +
                reason};
  return {CudaGate::skip, reason};
}

bool cuda_required() {
  const char* v = std::getenv("DPLAB_REQUIRE_CUDA");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

CudaGateDecision cuda_gate() {
  return decide_cuda_gate(cuda_available(), cuda_probe_failed(), cuda_unavailable_reason(),
                          cuda_required());
}

}  // namespace dplab::test
