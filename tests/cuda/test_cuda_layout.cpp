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

// The relayout kernel (a tiled transpose, core/cuda/elementwise_kernels.cu) against the CPU's
// placement, which Layout.NhwcPlacesEveryElementChannelsLastAndRoundTrips checks by formula:
// partial tiles on both sides, more than one tile of channels and of pixels, with and without a
// cast, both directions; the nhwc buffer itself is compared, element for element.
TEST(CudaLayout, RelayoutPlacesElementsAsTheCpuDoes) {
  DPLAB_CUDA_TEST_GATE();
  for (const Shape& s : {Shape{2, 40, 7, 9}, Shape{1, 3, 33, 34}, Shape{3, 64, 1, 1}}) {
    for (DType to : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(shape_str(s) + " f32 -> nhwc " + std::string(dtype_name(to)));
      const Tensor x = test::random_tensor(s, 41);
      Tensor want = Tensor::empty(s, Layout::nhwc, to);
      want.copy_(x);
      Tensor got = Tensor::empty(s, Layout::nhwc, to, Device::cuda(0));
      got.copy_(x.to(Device::cuda(0)));
      // The nhwc buffers as flat tensors: the device's copied back byte for byte.
      Tensor got_host = Tensor::empty({x.numel()}, to);
      const Tensor got_flat = Tensor::view_of(got.storage(), 0, {x.numel()}, to);
      got_host.copy_(got_flat);
      const Tensor want_flat = Tensor::view_of(want.storage(), 0, {x.numel()}, to);
      EXPECT_EQ(got_host.to_vector(), want_flat.to_vector());
      // And back to NCHW on the device.
      EXPECT_EQ(got.contiguous().to_vector(), want.contiguous().to_vector());
    }
  }
}

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
