// Casts: round trips, round-to-nearest-even, non-contiguous sources, the differentiable cast,
// and element-wise ops reading 16-bit inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

TEST(Cast, RoundTripsRepresentableValues) {
  std::vector<float> v = {0, 1, -2, 0.5f, 3.25f, -1024, 65504};
  Tensor x = Tensor::from_vector(v, {7});
  EXPECT_EQ(cast(cast(x, DType::f16), DType::f32).to_vector(), v);
  // 65504 is not a bf16 value; 65536 is (and is not an f16 one)
  std::vector<float> b = {0, 1, -2, 0.5f, 3.25f, -1024, 65536};
  EXPECT_EQ(cast(cast(Tensor::from_vector(b, {7}), DType::bf16), DType::f32).to_vector(), b);
  // bf16 -> f16 -> bf16 of values both hold exactly
  Tensor h = cast(Tensor::from_vector({1.5f, -0.25f, 96}, {3}), DType::bf16);
  EXPECT_EQ(cast(cast(h, DType::f16), DType::bf16).to_vector(),
            (std::vector<float>{1.5f, -0.25f, 96}));
}

TEST(Cast, RoundsToNearestEven) {
  // bf16 spacing at 1 is 2^-7: 1 + 2^-8 ties to 1 (even), 1 + 3·2^-8 ties to 1 + 2^-6 (even),
  // 1 + 2^-8 + 2^-12 rounds up.
  Tensor x =
      Tensor::from_vector({1.f + 1.f / 256, 1.f + 3.f / 256, 1.f + 1.f / 256 + 1.f / 4096}, {3});
  EXPECT_EQ(cast(x, DType::bf16).to_vector(),
            (std::vector<float>{1.f, 1.f + 4.f / 256, 1.f + 2.f / 256}));
  // f16 spacing at 1 is 2^-10; overflow to inf; the smallest subnormal survives.
  Tensor y =
      Tensor::from_vector({1.f + 1.f / 2048, 1.f + 3.f / 2048, 70000.f, 5.9604645e-08f}, {4});
  auto r = cast(y, DType::f16).to_vector();
  EXPECT_EQ(r[0], 1.f);
  EXPECT_EQ(r[1], 1.f + 4.f / 2048);
  EXPECT_TRUE(std::isinf(r[2]));
  EXPECT_EQ(r[3], 5.9604645e-08f);
}

TEST(Cast, NonContiguousSourceAndFastEqualsRef) {
  Tensor x = test::random_tensor({40, 30}, 3).transpose(0, 1);
  Tensor a = cast(x, DType::bf16);
  EXPECT_TRUE(a.is_contiguous());
  auto want = x.contiguous().to_vector();
  auto got = a.to_vector();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], bf16_to_f32(f32_to_bf16(want[i])));
}

TEST(Cast, GradientFlowsBackInTheSourceDtype) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3});
  x.set_requires_grad(true);
  Tensor h = cast(x, DType::bf16);
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_TRUE(h.requires_grad());
  backward(sum(mul_scalar(h, 3.f)));  // ops read bf16, compute in f32
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{3, 3, 3}));
  EXPECT_TRUE(cast(x, DType::f32).is_same(x));
  EXPECT_THROW(cast(x, DType::i32), Error);
}

TEST(Cast, ElementwiseOpsRead16BitInputs) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3}, DType::f16);
  Tensor b = Tensor::from_vector({0.5f, 0.5f, 0.5f}, {3}, DType::bf16);
  Tensor y = mul(a, b);
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0.5f, 1, 1.5f}));
  EXPECT_EQ(relu(cast(Tensor::from_vector({-1, 2}, {2}), DType::f16)).to_vector(),
            (std::vector<float>{0, 2}));
}

}  // namespace
}  // namespace dplab
