// The GPU tracks of a trace (core/cuda/gpu_timeline.cpp) on cuda:0: the assertions of the CPU
// twin (tests/core/test_trace.cpp, TraceGpuTracks) plus one `gpu compute` event per span, read
// back after the window, inside the host's interval. Skipped, with the reason, when no device
// is visible.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include "../data/temp_dir.h"
#include "common/harness.h"
#include "common/trace_check.h"

namespace dplab {
namespace {

TEST(TraceGpuTracksCuda, CudaDeviceAddsGpuComputeSpans) {
  DPLAB_CUDA_TEST_GATE();
  test::ScopedTempDir dir("trace-gpu-cuda");
  const nlohmann::json j = test::run_gpu_span_case(Device::cuda(0), dir.file("trace"), 5);
  bool gpu_thread_named = false;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "thread_name" && e["tid"] == 4)
      gpu_thread_named = e["args"]["name"] == "gpu compute";
  EXPECT_TRUE(gpu_thread_named);
}

}  // namespace
}  // namespace dplab
