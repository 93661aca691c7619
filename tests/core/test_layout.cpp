// The blocked nChw16c activation layout (core/tensor.h): where each element lives, the guards
// that keep strided code from misreading it, and that the CPU backend really keeps a ResNet
// unit's activations blocked (the op cases in tests/common/op_cases_blocked.cpp check the
// values against the reference kernels).
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/harness.h"
#include "dplab/core/layout.h"
#include "dplab/core/ops.h"

namespace dplab {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Layout, BlockedPlacesEveryElementByTheFormulaAndRoundTrips) {
  const Tensor x = test::random_tensor({2, 32, 3, 4}, 7);
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    BackendOverride o(*be);
    const Tensor b = x.to(Layout::nChw16c);
    ASSERT_TRUE(b.is_blocked());
    EXPECT_FALSE(b.is_contiguous());
    const float* bp = b.data_any_layout<float>();
    const std::vector<float> v = x.to_vector();
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 32; ++c)
        for (int64_t hw = 0; hw < 12; ++hw)
          ASSERT_EQ(bp[nChw16c_offset(n, c, hw, 32, 12)], v[(n * 32 + c) * 12 + hw])
              << be->name << " n " << n << " c " << c << " hw " << hw;
    EXPECT_EQ(b.contiguous().to_vector(), v) << be->name;
    EXPECT_EQ(b.clone().layout(), Layout::strided);
    // A strided source that is not contiguous converts too.
    const Tensor t = x.transpose(2, 3).contiguous().transpose(2, 3);
    ASSERT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.to(Layout::nChw16c).to_vector(), v) << be->name;
  }
}

// nhwc (channels-last): element (n, c, h, w) at ((n·H + h)·W + w)·C + c, written out here
// rather than through nhwc_offset; any float dtype, any channel count; casts keep the layout.
TEST(Layout, NhwcPlacesEveryElementChannelsLastAndRoundTrips) {
  const Tensor x = test::random_tensor({2, 5, 3, 4}, 9);
  const std::vector<float> v = x.to_vector();
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    BackendOverride o(*be);
    for (DType dt : {DType::f32, DType::bf16}) {
      const Tensor xd = x.to(dt);
      const Tensor b = xd.to(Layout::nhwc);
      ASSERT_EQ(b.layout(), Layout::nhwc);
      EXPECT_FALSE(b.is_contiguous());
      const void* bp = b.raw_data_any_layout();
      const std::vector<float> vd = xd.to_vector();
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < 5; ++c)
          for (int64_t h = 0; h < 3; ++h)
            for (int64_t w = 0; w < 4; ++w)
              ASSERT_EQ(load_as_f32(bp, dt, ((n * 3 + h) * 4 + w) * 5 + c),
                        vd[((n * 5 + c) * 3 + h) * 4 + w])
                  << be->name << " n " << n << " c " << c << " h " << h << " w " << w;
      EXPECT_EQ(b.contiguous().to_vector(), vd) << be->name;
      // A strided source that is not contiguous converts too.
      const Tensor t = xd.transpose(2, 3).contiguous().transpose(2, 3);
      EXPECT_EQ(t.to(Layout::nhwc).contiguous().to_vector(), vd) << be->name;
    }
    // A cast between float dtypes in one layout keeps it, element for element.
    const Tensor b32 = x.to(Layout::nhwc);
    Tensor b16 = Tensor::empty(x.shape(), Layout::nhwc, DType::bf16);
    b16.copy_(b32);
    EXPECT_EQ(b16.contiguous().to_vector(), x.to(DType::bf16).to_vector()) << be->name;
  }
  // nhwc is for 4-D float tensors.
  EXPECT_NE(error_of([] {
              (void)Tensor::empty({2, 3, 4}, Layout::nhwc);
            }).find("a float [N, C, H, W] tensor"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)Tensor::empty({1, 2, 2, 2}, Layout::nhwc, DType::i64);
            }).find("nhwc"),
            std::string::npos);
}

// The cast op keeps a non-strided layout (pooling widens a bf16 activation this way, so the
// pooling kernels take it in the backend's layout), and its gradient reaches an NCHW leaf as f32
// with the values a strided cast gives.
TEST(Layout, CastKeepsTheLayoutAndItsGradientReachesTheLeaf) {
  for (Layout l : {Layout::nChw16c, Layout::nhwc}) {
    Tensor x = test::random_tensor({2, 16, 3, 3}, 12);
    x.set_requires_grad(true);
    const Tensor b = cast(to_layout(x, l), DType::bf16);
    EXPECT_EQ(b.layout(), l) << layout_name(l);
    EXPECT_EQ(b.dtype(), DType::bf16);
    EXPECT_EQ(b.contiguous().to_vector(), x.to(DType::bf16).to_vector()) << layout_name(l);
    const Tensor w = test::random_tensor({2, 16, 3, 3}, 13);
    backward(sum(mul(cast(b, DType::f32), w)));
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().layout(), Layout::strided);
    EXPECT_EQ(x.grad().dtype(), DType::f32);
    // d/dx of sum(f32(bf16(x)) * w) is w, carried through the bf16 tensor as its bf16 gradient
    // (as in PyTorch): w rounded to bf16 once.
    EXPECT_EQ(x.grad().to_vector(), w.to(DType::bf16).to_vector()) << layout_name(l);
  }
}

TEST(Layout, StridedCodeCannotMisreadABlockedTensor) {
  const Tensor b = test::random_tensor({1, 16, 2, 2}, 8).to(Layout::nChw16c);
  EXPECT_NE(error_of([&] { (void)b.data<float>(); }).find("nChw16c"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)b.slice(1, 0, 4); }).find("nChw16c"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)b.transpose(2, 3); }).find("nChw16c"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)b.view({16, 4}); }).find("nChw16c"), std::string::npos);
  // A cast keeps the layout (and so its refusals), or converts to NCHW where it cannot hold the
  // dtype.
  EXPECT_EQ(b.to(DType::bf16).layout(), Layout::nChw16c);
  EXPECT_NE(error_of([&] { (void)b.to(DType::bf16).data<bf16_t>(); }).find("nChw16c"),
            std::string::npos);
  EXPECT_EQ(b.to(DType::bf16).contiguous().to_vector(), b.contiguous().to(DType::bf16).to_vector());
  EXPECT_EQ(b.to(DType::f16).layout(), Layout::strided);
  EXPECT_NE(b.str().find("nChw16c"), std::string::npos);
  // Only f32 [N, C, H, W] with C % 16 == 0 can be blocked.
  EXPECT_NE(error_of([] {
              (void)Tensor::empty({1, 12, 2, 2}, Layout::nChw16c);
            }).find("multiple of 16"),
            std::string::npos);
  // The differentiable ops that read strided data convert instead of failing.
  EXPECT_EQ(reshape(b, {16, 4}).to_vector(), b.to_vector());
  EXPECT_EQ(transpose(b, 2, 3).contiguous().to_vector(),
            b.contiguous().transpose(2, 3).contiguous().to_vector());
}

// oneDNN's direct convolutions write nChw16c where its AVX-512 kernels run. With AVX2 only they
// choose nChw8c, which dplab does not keep, so there a convolution's output is plain NCHW (the
// staging reorder follows it) and no blocked chain starts at a convolution.
bool onednn_convolutions_write_nchw16c() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512) == avx512;
}

// On the CPU a conv -> bn -> relu -> add -> maxpool chain stays blocked from the first
// convolution on, forward and backward (dx of the block input comes back blocked), and agrees
// with the same chain on strided tensors. Without AVX-512 (above) the convolution's output is
// plain, and the chain after it is checked from a blocked input instead (bn -> relu -> add ->
// maxpool are dplab's own kernels, blocked on every CPU).
TEST(Layout, CpuKeepsAResNetUnitBlockedEndToEnd) {
  const bool conv_blocked = onednn_convolutions_write_nchw16c();
  Conv2dOptions o;
  o.padding = {1, 1};
  const Tensor x0 = test::random_tensor({2, 16, 6, 6}, 9);
  Tensor w = test::random_tensor({16, 16, 3, 3}, 10);
  w.set_requires_grad(true);
  Tensor g = Tensor::ones({16});
  g.set_requires_grad(true);
  Tensor bb = Tensor::zeros({16});
  bb.set_requires_grad(true);
  auto run = [&](Layout l, std::vector<Tensor>* seen) {
    Tensor x = x0.to(l);
    x.set_requires_grad(true);
    const Tensor c = conv_blocked ? conv2d(x, w, Tensor(), o) : x;
    const Tensor n = batch_norm2d(c, g, bb, Tensor(), Tensor(), true);
    const Tensor r = relu(add(n, x));
    Pool2dOptions po;
    po.kernel = {2, 2};
    const Tensor p = max_pool2d(r, po);
    if (seen) *seen = {c, n, r, p};
    backward(sum(mul(p, test::random_tensor(p.shape(), 11))));
    return std::pair{p.to_vector(), x.grad()};
  };
  std::vector<Tensor> seen;
  const auto [blocked_out, blocked_dx] = run(Layout::nChw16c, &seen);
  for (const Tensor& t : seen) EXPECT_TRUE(t.is_blocked()) << t.str();
  if (!conv_blocked) {  // the convolution follows oneDNN's nChw8c choice with a plain output
    EXPECT_FALSE(conv2d(x0.to(Layout::nChw16c), w, Tensor(), o).is_blocked());
  }
  const std::vector<float> w_grad_blocked =
      conv_blocked ? w.grad().to_vector() : std::vector<float>();
  w.set_grad(Tensor());
  g.set_grad(Tensor());
  bb.set_grad(Tensor());
  const auto [plain_out, plain_dx] = run(Layout::strided, nullptr);
  test::expect_close(Tensor::from_vector(blocked_out, {2, 16, 3, 3}),
                     Tensor::from_vector(plain_out, {2, 16, 3, 3}), 1e-10, "output");
  test::expect_close(blocked_dx, plain_dx, 1e-10, "dx");
  if (conv_blocked)
    test::expect_close(Tensor::from_vector(w_grad_blocked, w.shape()), w.grad(), 1e-10, "dw");
}

}  // namespace
}  // namespace dplab
