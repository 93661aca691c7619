// HostReadback on a device (core/host_readback.h): the CPU twin's assertions
// (HostReadback.TakesTheValuesOfTheLastStartOnce), with the compute stream held while start()
// runs: start() must return without waiting for the device, take() after the release.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "common/cuda_gate.h"
#include "common/stream_gate.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#include "dplab/core/error.h"
#include "dplab/core/host_readback.h"

namespace dplab {
namespace {

const Device kDev = Device::cuda(0);

TEST(CudaHostReadback, StartDoesNotWaitForTheDevice) {
  DPLAB_CUDA_TEST_GATE();
  HostReadback r;
  EXPECT_FALSE(r.pending());
  EXPECT_THROW(r.take(), Error);
  Tensor t = Tensor::from_vector({1.5f, -0.f, 3.f}, {3}).to(kDev);
  cuda::wait_stream(cuda::compute_stream(0), "test input", 60);
  {
    test::StreamGate held(cuda::compute_stream(0));
    r.start(t);    // returns at once: the copy waits behind the gate on the device
    t.fill_(9.f);  // enqueued after the copy: not what is read
    EXPECT_TRUE(r.pending());
    const cudaError_t q = cudaStreamQuery(cuda::compute_stream(0));
    if (q == cudaErrorNotReady) (void)cudaGetLastError();
    EXPECT_EQ(q, cudaErrorNotReady) << "the gate still holds the copy";
  }
  EXPECT_EQ(r.take(), (std::vector<float>{1.5f, -0.f, 3.f}));
  EXPECT_FALSE(r.pending());
  EXPECT_THROW(r.take(), Error);
  r.start(Tensor::from_vector({2.f}, {1}).to(kDev));
  r.start(Tensor::from_vector({4.f, 5.f}, {2}).to(kDev));  // the first, not taken, is dropped
  EXPECT_EQ(r.take(), (std::vector<float>{4.f, 5.f}));
  EXPECT_THROW(r.start(Tensor::from_vector({1.f}, {1}, DType::bf16).to(kDev)), Error);
}

}  // namespace
}  // namespace dplab
