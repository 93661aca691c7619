#include "common/cuda_gate.h"

#include <cstdlib>
#include <cstring>

#include "dplab/core/device.h"

namespace dplab::test {

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
