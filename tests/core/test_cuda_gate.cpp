// Issue #19 items 2 and 11 on the CPU: how a device probe is read (core/device_probe.h) and what
// a CUDA test does with it (tests/common/cuda_gate.h): run, skip with the reason, or fail.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"
#include "dplab/core/device_probe.h"

namespace dplab {
namespace {

using test::CudaGate;
using test::decide_cuda_gate;

TEST(CudaProbe, NoDeviceAndNoDriverAreSkipsABrokenDriverIsNot) {
  EXPECT_EQ(classify_cuda_probe(true, 2, false, true), CudaProbeOutcome::available);
  EXPECT_EQ(classify_cuda_probe(true, 0, false, true), CudaProbeOutcome::no_device);
  // cudaErrorNoDevice / cudaErrorStubLibrary.
  EXPECT_EQ(classify_cuda_probe(false, 0, true, true), CudaProbeOutcome::no_device);
  // Any error without an installed driver (CI: the runtime says cudaErrorInsufficientDriver).
  EXPECT_EQ(classify_cuda_probe(false, 0, false, false), CudaProbeOutcome::no_device);
  // The same error with a driver installed: too old, not initialisable, ... a failure.
  EXPECT_EQ(classify_cuda_probe(false, 0, false, true), CudaProbeOutcome::broken);
}

TEST(CudaGate, RunsWithADevice) {
  EXPECT_EQ(decide_cuda_gate(true, false, "", false).gate, CudaGate::run);
  EXPECT_EQ(decide_cuda_gate(true, false, "", true).gate, CudaGate::run);
}

TEST(CudaGate, SkipsWithoutADeviceUnlessRequired) {
  const auto skip = decide_cuda_gate(false, false, "no CUDA device: none here", false);
  EXPECT_EQ(skip.gate, CudaGate::skip);
  EXPECT_EQ(skip.message, "no CUDA device: none here");
  const auto fail = decide_cuda_gate(false, false, "no CUDA device: none here", true);
  EXPECT_EQ(fail.gate, CudaGate::fail);
  EXPECT_NE(fail.message.find("DPLAB_REQUIRE_CUDA=1"), std::string::npos) << fail.message;
  EXPECT_NE(fail.message.find("no CUDA device: none here"), std::string::npos) << fail.message;
}

TEST(CudaGate, ABrokenDriverFailsAlwaysWithItsErrorText) {
  const std::string why = "CUDA driver failure: cudaGetDeviceCount failed with cudaErrorX";
  for (bool require : {false, true}) {
    const auto d = decide_cuda_gate(false, true, why, require);
    EXPECT_EQ(d.gate, CudaGate::fail);
    EXPECT_NE(d.message.find(why), std::string::npos) << d.message;
  }
}

}  // namespace
}  // namespace dplab
