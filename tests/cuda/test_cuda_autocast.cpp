// Autocast on cuda:0 (core/autocast.h): conv2d and linear run their kernels on bf16/f16
// operands, forward and backward, and agree with the CPU (f32 kernels on rounded operands, or
// bf16 activations on an AVX-512 CPU) within the 16-bit dtype's precision; gradients reach the
// f32 leaves as f32 on the device. Under bf16 a convolution's output stays bf16 on CUDA (bf16
// activations), under f16 it is cast to f32. That the kernels really see 16-bit tensors is checked
// by values only 16-bit operands produce: a conv output exactly representable in the 16-bit dtype,
// and gradients computed from a rounded dy (exact sums the CPU emulation, which keeps dy in f32,
// does not give). Each test skips with cuda_unavailable_reason() when no CUDA device is visible.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <cmath>
#include <functional>
#include <vector>

#include "common/harness.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops.h"

namespace dplab {
namespace {

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// The dtype of conv2d's output under autocast(d) on `dev`: bf16 where the backend keeps bf16
// activations (CUDA, AVX-512 CPUs), else f32 (the 16-bit output cast back, or f32 math).
DType conv_output_dtype(Device dev, DType d) {
  return d == DType::bf16 && backend_for(dev).bf16_activations ? DType::bf16 : DType::f32;
}

// The output of `op` under autocast(d) (as f32) and the gradients of sum(op(inputs) * g) w.r.t.
// every input, all copied back to the host. `inputs` and `g` are host tensors; every input
// requires grad. Checks that the output is a `y_dtype` tensor and each gradient an f32 tensor
// on `dev`.
std::vector<Tensor> run(Device dev, DType d, const Op& op, const std::vector<Tensor>& inputs,
                        const Tensor& g, DType y_dtype = DType::f32) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs)
    leaves.push_back(test::leaf_on(t.detach().set_requires_grad(true), dev));
  Tensor y;
  {
    AutocastGuard a(d);
    y = op(leaves);
  }
  EXPECT_EQ(y.dtype(), y_dtype);
  EXPECT_EQ(y.device(), dev);
  backward(sum(mul(y, g.to(dev))));
  std::vector<Tensor> out{y.to(Device::cpu()).contiguous().to(DType::f32)};
  for (const Tensor& l : leaves) {
    EXPECT_TRUE(l.grad().defined());
    if (!l.grad().defined()) return out;
    EXPECT_EQ(l.grad().dtype(), DType::f32);
    EXPECT_EQ(l.grad().device(), dev);
    out.push_back(l.grad().to(Device::cpu()));
  }
  return out;
}

// Normalised error allowed between the device and the CPU emulation: the device rounds a few
// more values to the 16-bit dtype (the conv output, dy) and sums in another order. One rounding
// has relative error <= 2^-9 (bf16) or 2^-12 (f16), an nmse of about its square.
double tolerance(DType d) {
  return d == DType::bf16 ? 1e-4 : 1e-6;
}

// Spacing of the 16-bit dtype's values in [1, 2).
float epsilon(DType d) {
  return d == DType::bf16 ? 0x1p-7f : 0x1p-10f;
}

bool representable(const Tensor& t, DType d) {
  // contiguous(): the CPU convolution can return oneDNN's blocked layout (nChw16c where AVX-512
  // is), which to() refuses; the first H200 host, a Xeon with AVX-512, showed it.
  const Tensor plain = t.contiguous();
  const std::vector<float> a = plain.to_vector(), b = plain.to(d).to(DType::f32).to_vector();
  return a == b;
}

Conv2dOptions conv_options() {
  Conv2dOptions o;
  o.padding = {1, 1};
  o.stride = {2, 1};
  return o;
}

TEST(CudaAutocast, Conv2dMatchesTheCpuEmulation) {
  DPLAB_CUDA_TEST_GATE();
  const Tensor x = test::random_tensor({2, 8, 9, 9}, 1), w = test::random_tensor({16, 8, 3, 3}, 2);
  const Tensor b = test::random_tensor({16}, 3), g = test::random_tensor({2, 16, 5, 9}, 4);
  const Op op = [](const std::vector<Tensor>& in) {
    return conv2d(in[0], in[1], in[2], conv_options());
  };
  const Device cuda = Device::cuda(0), cpu = Device::cpu();
  for (DType d : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(d));
    const std::vector<Tensor> dev = run(cuda, d, op, {x, w, b}, g, conv_output_dtype(cuda, d));
    const std::vector<Tensor> host = run(cpu, d, op, {x, w, b}, g, conv_output_dtype(cpu, d));
    ASSERT_EQ(dev.size(), 4u);
    ASSERT_EQ(host.size(), 4u);
    test::expect_close(dev[0], host[0], tolerance(d), "y");
    test::expect_close(dev[1], host[1], tolerance(d), "dx");
    test::expect_close(dev[2], host[2], tolerance(d), "dw");
    // The bias gradient is f32 on both, summed from dy: under f16 the same f32 dy; under bf16 the
    // device sums dy as its bf16 activation gradient (rounded once), which an AVX2 CPU does not.
    test::expect_close(dev[3], host[3], d == DType::bf16 ? tolerance(d) : 1e-10, "db");
    // Autocast changed the result (the test can tell f32 from 16-bit math).
    EXPECT_GT(test::max_abs_diff(dev[0], conv2d(x, w, b, conv_options())), 0.0);
  }
}

TEST(CudaAutocast, Conv2dRunsOnSixteenBitOperands) {
  DPLAB_CUDA_TEST_GATE();
  const Device cuda = Device::cuda(0), cpu = Device::cpu();
  for (DType d : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(d));
    // Whether the CPU keeps this autocast's activations in d (bf16 on an AVX-512 CPU): then its
    // output and dy are rounded to d as the device's are.
    const bool cpu_rounds = conv_output_dtype(cpu, d) == d;
    // Forward: without a bias the device's output is the 16-bit convolution output, so each
    // value is exactly representable in d; the CPU emulation's f32 sums are not.
    const Tensor x = test::random_tensor({2, 8, 9, 9}, 5),
                 w = test::random_tensor({16, 8, 3, 3}, 6);
    const Op no_bias = [](const std::vector<Tensor>& in) {
      return conv2d(in[0], in[1], Tensor(), conv_options());
    };
    const Tensor g = test::random_tensor({2, 16, 5, 9}, 7);
    EXPECT_TRUE(representable(run(cuda, d, no_bias, {x, w}, g, conv_output_dtype(cuda, d))[0], d));
    EXPECT_EQ(representable(run(cpu, d, no_bias, {x, w}, g, conv_output_dtype(cpu, d))[0], d),
              cpu_rounds);

    // Backward: 3 images, 1 input and 3 output channels, 1x1, all ones, and dy = 1 + 0.4 eps
    // everywhere. dx and dw are sums of three dy. The kernels get dy rounded to d (1), so
    // dx = dw = 3; the CPU emulation sums the f32 dy (3 + 1.2 eps) and rounds that to d
    // (3 + 2 eps, the nearest value of d), unless it rounds dy too.
    const float e = epsilon(d);
    const Tensor ones_x = Tensor::ones({3, 1, 1, 1}), ones_w = Tensor::ones({3, 1, 1, 1});
    const Tensor dy = Tensor::full({3, 3, 1, 1}, 1.0 + 0.4 * e);
    const Op conv1x1 = [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor()); };
    const std::vector<Tensor> dev =
        run(cuda, d, conv1x1, {ones_x, ones_w}, dy, conv_output_dtype(cuda, d));
    const std::vector<Tensor> host =
        run(cpu, d, conv1x1, {ones_x, ones_w}, dy, conv_output_dtype(cpu, d));
    ASSERT_EQ(dev.size(), 3u);
    ASSERT_EQ(host.size(), 3u);
    for (int i : {1, 2}) {
      for (float v : dev[i].to_vector()) EXPECT_EQ(v, 3.f) << "gradient " << i;
      for (float v : host[i].to_vector())
        EXPECT_EQ(v, cpu_rounds ? 3.f : 3.f + 2 * e) << "CPU gradient " << i;
    }
  }
}

TEST(CudaAutocast, LinearMatchesTheCpuEmulation) {
  DPLAB_CUDA_TEST_GATE();
  const Tensor x = test::random_tensor({24, 40}, 8), w = test::random_tensor({12, 40}, 9);
  const Tensor b = test::random_tensor({12}, 10), g = test::random_tensor({24, 12}, 11);
  const Op op = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  for (DType d : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(d));
    const std::vector<Tensor> dev = run(Device::cuda(0), d, op, {x, w, b}, g);
    const std::vector<Tensor> cpu = run(Device::cpu(), d, op, {x, w, b}, g);
    ASSERT_EQ(dev.size(), 4u);
    ASSERT_EQ(cpu.size(), 4u);
    // y: the same rounded operands and f32 accumulation on both; only the order of the sums
    // differs.
    test::expect_close(dev[0], cpu[0], 1e-10, "y");
    test::expect_close(dev[1], cpu[1], tolerance(d), "dx");
    test::expect_close(dev[2], cpu[2], tolerance(d), "dw");
    test::expect_close(dev[3], cpu[3], 1e-10, "db");
    EXPECT_GT(test::max_abs_diff(dev[0], linear(x, w, b)), 0.0);
  }
}

TEST(CudaAutocast, LinearRunsOnSixteenBitOperands) {
  DPLAB_CUDA_TEST_GATE();
  for (DType d : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(d));
    const float e = epsilon(d);
    // Forward: y = 1 * 1 + (e/16) * 1 is exact in f32 but not in d: the GEMM writes its f32
    // accumulator, so the output keeps it, as the CPU emulation does.
    const Tensor x = Tensor::from_vector({1.f, e / 16}, {1, 2}), w = Tensor::ones({1, 2});
    const Op no_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor()); };
    const Tensor g1 = Tensor::ones({1, 1});
    EXPECT_EQ(run(Device::cuda(0), d, no_bias, {x, w}, g1)[0].item(), 1.f + e / 16);
    EXPECT_EQ(run(Device::cpu(), d, no_bias, {x, w}, g1)[0].item(), 1.f + e / 16);

    // Backward: x [3, 1] and W [3, 1] all ones, dy [3, 3] = 1 + 0.4 eps. dx and dW are sums of
    // three dy: 3 from the kernels' dy rounded to d, 3 + 2 eps on the CPU (f32 sum, then
    // rounded). The bias gradient sums the f32 dy on both: 3 + 1.2 eps, not rounded to d.
    const Tensor ones = Tensor::ones({3, 1}), b = Tensor::zeros({3});
    const Tensor dy = Tensor::full({3, 3}, 1.0 + 0.4 * e);
    const Op op = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
    const std::vector<Tensor> dev = run(Device::cuda(0), d, op, {ones, ones, b}, dy);
    const std::vector<Tensor> cpu = run(Device::cpu(), d, op, {ones, ones, b}, dy);
    ASSERT_EQ(dev.size(), 4u);
    ASSERT_EQ(cpu.size(), 4u);
    for (int i : {1, 2}) {
      for (float v : dev[i].to_vector()) EXPECT_EQ(v, 3.f) << "gradient " << i;
      for (float v : cpu[i].to_vector()) EXPECT_EQ(v, 3.f + 2 * e) << "CPU gradient " << i;
    }
    EXPECT_EQ(dev[3].to_vector(), cpu[3].to_vector());
    for (float v : dev[3].to_vector()) EXPECT_NEAR(v, 3.0 + 1.2 * e, 1e-6);
  }
}

}  // namespace
}  // namespace dplab
