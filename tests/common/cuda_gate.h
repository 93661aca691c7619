// The one place a test decides whether it runs on CUDA, skips, or fails (issue #19):
//  - a device is visible: run;
//  - the driver is installed but broken (cuda_probe_failed()): FAIL with the error text, always
//    (a device machine with a broken driver must not look green);
//  - no device / no driver / a CPU-only build: skip with the reason, unless the environment sets
//    DPLAB_REQUIRE_CUDA=1 (the device kit's check on a GPU machine), which makes it a failure.
// Every CUDA test (tests/cuda, the device tests elsewhere) and the NCCL tests start with
// DPLAB_CUDA_TEST_GATE().
#pragma once
#include <gtest/gtest.h>

#include <string>

namespace dplab::test {

enum class CudaGate { run, skip, fail };

struct CudaGateDecision {
  CudaGate gate = CudaGate::run;
  std::string message;  // the reason to skip, or the failure text
};

// Pure decision (unit-tested): `available` and `probe_failed` as core/device.h reports them,
// `reason` = cuda_unavailable_reason(), `require` = DPLAB_REQUIRE_CUDA is set to 1.
CudaGateDecision decide_cuda_gate(bool available, bool probe_failed, const std::string& reason,
                                  bool require);
// The decision for this process (reads core/device.h and the environment).
CudaGateDecision cuda_gate();
// Whether DPLAB_REQUIRE_CUDA=1 is set.
bool cuda_required();
// CUDA_MODULE_LOADING as the tests run with it: EAGER unless the environment set another value
// (cuda_gate.cpp sets it before CUDA starts).
const char* cuda_module_loading();

}  // namespace dplab::test

// Skips or fails the current test as cuda_gate() decides; continues when a device is there.
#define DPLAB_CUDA_TEST_GATE()                                                                  \
  do {                                                                                          \
    const ::dplab::test::CudaGateDecision dplab_gate_ = ::dplab::test::cuda_gate();             \
    if (dplab_gate_.gate == ::dplab::test::CudaGate::skip) GTEST_SKIP() << dplab_gate_.message; \
    if (dplab_gate_.gate == ::dplab::test::CudaGate::fail) GTEST_FAIL() << dplab_gate_.message; \
  } while (0)
