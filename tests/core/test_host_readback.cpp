// HostReadback (core/host_readback.h) on the CPU: the values of the last start(), once. The same
// assertions run on a device in CudaHostReadback.StartDoesNotWaitForTheDevice
// (tests/cuda/test_cuda_host_readback.cpp), which also checks that start() does not wait.
#include <gtest/gtest.h>

#include "dplab/core/error.h"
#include "dplab/core/host_readback.h"

namespace dplab {
namespace {

TEST(HostReadback, TakesTheValuesOfTheLastStartOnce) {
  HostReadback r;
  EXPECT_FALSE(r.pending());
  EXPECT_THROW(r.take(), Error);
  Tensor t = Tensor::from_vector({1.5f, -0.f, 3.f}, {3});
  r.start(t);
  t.fill_(9.f);  // after start(): not what was read
  EXPECT_TRUE(r.pending());
  EXPECT_EQ(r.take(), (std::vector<float>{1.5f, -0.f, 3.f}));
  EXPECT_FALSE(r.pending());
  EXPECT_THROW(r.take(), Error);
  r.start(Tensor::from_vector({2.f}, {1}));
  r.start(Tensor::from_vector({4.f, 5.f}, {2}));  // the first, not taken, is dropped
  EXPECT_EQ(r.take(), (std::vector<float>{4.f, 5.f}));
  EXPECT_THROW(r.start(Tensor::from_vector({1.f}, {1}, DType::bf16)), Error);  // f32 only
}

}  // namespace
}  // namespace dplab
