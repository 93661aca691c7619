// On cuda:0 a ResNet unit under bf16 autocast runs channels-last (Layout::nhwc, core/tensor.h)
// from its first convolution to its last ReLU: the convolutions write nhwc, batch norm (plain,
// with ReLU, with the residual add and ReLU) and the element-wise ops keep it, and the gradient
// reaches the NCHW input in NCHW. The CPU twin is Layout.CpuKeepsAResNetUnitBlockedEndToEnd (the
// same assertions on the CPU's nChw16c). Values: the unit's output against the same unit on the
// CPU reference kernels under autocast, within the bf16 op cases' tolerance (1e-4 normalised
// error, argued in tests/common/op_cases_bf16.cpp); the op cases check each op's values and
// gradients one by one.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"
#include "common/harness.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops.h"

namespace dplab {
namespace {

TEST(CudaLayout, Bf16ResNetUnitStaysNhwcEndToEnd) {
  DPLAB_CUDA_TEST_GATE();
  Conv2dOptions same;
  same.padding = {1, 1};
  const std::vector<Tensor> host = {
      test::random_tensor({2, 8, 6, 6}, 31),      // x (NCHW f32, the network's input)
      test::random_tensor({16, 8, 3, 3}, 32),     // stem conv
      test::random_tensor({16, 16, 3, 3}, 33),    // block conv
      test::random_tensor({16}, 34, 0.5f, 1.5f),  // batch-norm weight
      test::random_tensor({16}, 35),              // batch-norm bias
  };
  auto run = [&](Device d, std::vector<Tensor>* seen) {
    AutocastGuard bf16(DType::bf16);
    std::vector<Tensor> v;
    for (const Tensor& t : host) {
      Tensor l = t.to(d);
      l.set_requires_grad(true);
      v.push_back(l);
    }
    const Tensor a = conv2d(v[0], v[1], Tensor(), same);
    const Tensor b = batch_norm2d_relu(a, v[3], v[4], Tensor(), Tensor(), true);
    const Tensor c =
        batch_norm2d(conv2d(b, v[2], Tensor(), same), v[3], v[4], Tensor(), Tensor(), true);
    const Tensor r = relu(add(c, a));
    const Tensor y = batch_norm2d_add_relu(conv2d(r, v[2], Tensor(), same), r, v[3], v[4], Tensor(),
                                           Tensor(), true);
    if (seen) *seen = {a, b, c, r, y};
    backward(sum(cast(y, DType::f32)));
    return std::pair{y.contiguous().to(DType::f32).to(Device::cpu()), v[0].grad()};
  };
  std::vector<Tensor> seen;
  const auto [y_dev, dx_dev] = run(Device::cuda(0), &seen);
  for (const Tensor& t : seen) {
    EXPECT_EQ(t.layout(), Layout::nhwc) << t.str();
    EXPECT_EQ(t.dtype(), DType::bf16) << t.str();
  }
  ASSERT_TRUE(dx_dev.defined());
  EXPECT_EQ(dx_dev.layout(), Layout::strided) << dx_dev.str();
  EXPECT_EQ(dx_dev.dtype(), DType::f32) << dx_dev.str();
  BackendOverride ref(ref_backend());
  const auto [y_ref, dx_ref] = run(Device::cpu(), nullptr);
  test::expect_close(y_dev, y_ref, 1e-4, "unit output");
}

}  // namespace
}  // namespace dplab
