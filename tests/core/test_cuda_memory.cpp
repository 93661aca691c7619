// CUDA memory and element-wise memory kernels: the same assertions as the CPU path, run on the
// device when one exists; reported as skipped, with the reason, when none does.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include "common/harness.h"

namespace dplab {
namespace {

#define DPLAB_REQUIRE_CUDA() DPLAB_CUDA_TEST_GATE();

TEST(CudaMemory, RoundTripsEveryDtype) {
  DPLAB_REQUIRE_CUDA();
  std::vector<float> v = {0, 1, -2, 3.5f, 100, 7};
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::u8}) {
    Tensor h = Tensor::from_vector(v, {2, 3}, t);
    if (t == DType::u8) h = Tensor::from_vector({0, 1, 2, 3, 100, 7}, {2, 3}, t);
    Tensor d = h.to(Device::cuda(0));
    EXPECT_TRUE(d.device().is_cuda());
    EXPECT_EQ(d.to(Device::cpu()).to_vector(), h.to_vector()) << dtype_name(t);
  }
}

TEST(CudaMemory, CastsMatchCpuBitwise) {
  DPLAB_REQUIRE_CUDA();
  Tensor x = test::random_tensor({1000}, 3, -70000.f, 70000.f);
  for (DType t : {DType::bf16, DType::f16}) {
    Tensor cpu = x.to(t);
    Tensor gpu = x.to(Device::cuda(0)).to(t).to(Device::cpu());
    EXPECT_EQ(gpu.to_vector(), cpu.to_vector()) << dtype_name(t);
  }
}

TEST(CudaMemory, FillAndAxpyMatchCpu) {
  DPLAB_REQUIRE_CUDA();
  Tensor x = test::random_tensor({333}, 1), y = test::random_tensor({333}, 2);
  Tensor xd = x.to(Device::cuda(0)), yd = y.to(Device::cuda(0));
  add_(y, x, 0.5f);
  add_(yd, xd, 0.5f);
  EXPECT_EQ(yd.to(Device::cpu()).to_vector(), y.to_vector());
  Tensor f = Tensor::full({5}, 2.5, DType::f32, Device::cuda(0));
  EXPECT_EQ(f.to(Device::cpu()).to_vector(), std::vector<float>(5, 2.5f));
}

TEST(CudaMemory, UnavailableDeviceGivesAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device exists; this checks the no-device error";
  try {
    Tensor::empty({4}, DType::f32, Device::cuda(0));
    FAIL() << "allocating on cuda:0 without a device must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dplab
