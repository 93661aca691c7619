// bf16 autocast (core/autocast.h): conv2d and linear inside an AutocastGuard equal the f32 ops
// on bf16-rounded operands exactly, the mode is scoped, and gradients reach the f32 weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/harness.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops.h"

namespace dplab {
namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  Tensor ha = a.contiguous(), hb = b.contiguous();
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

Tensor rounded(const Tensor& t, DType d) {
  return t.to(d).to(DType::f32);
}

// Values k/16 in [-1, 1]: exact in bf16, and so are their sums with +-1/16 (finite differences).
Tensor sixteenths(const Shape& shape, uint64_t seed) {
  std::vector<float> v = test::random_tensor(shape, seed).to_vector();
  for (float& x : v) x = std::round(x * 16.f) / 16.f;
  return Tensor::from_vector(v, shape);
}

// Values k/2 in [-1, 1], for the convolution, whose output stays bf16 under CPU autocast: with
// steps of 1/2 every operand is a multiple of 1/2 below 1.5 in magnitude, every output a multiple
// of 1/4 below 2 * 9 * 1.5 * 1.5 + 1.5 < 64, so 8 significant bits hold it: the bf16 output is
// exact and the finite differences see no rounding.
Tensor halves(const Shape& shape, uint64_t seed) {
  std::vector<float> v = test::random_tensor(shape, seed).to_vector();
  for (float& x : v) x = std::round(x * 2.f) / 2.f;
  return Tensor::from_vector(v, shape);
}

TEST(Autocast, ScopeSetsAndRestoresTheMode) {
  EXPECT_EQ(autocast_dtype(), DType::f32);
  {
    AutocastGuard a(DType::bf16);
    EXPECT_EQ(autocast_dtype(), DType::bf16);
    {
      AutocastGuard off(DType::f32);
      EXPECT_FALSE(autocast_enabled());
    }
    EXPECT_EQ(autocast_dtype(), DType::bf16);
  }
  EXPECT_EQ(autocast_dtype(), DType::f32);
  EXPECT_THROW(AutocastGuard(DType::i32), Error);
}

// bf16 on a CPU whose backend keeps bf16 activations (AVX-512; core/kernels/conv.h says why not
// with AVX2) makes y bf16: y is the f32 op on the rounded
// operands, rounded to bf16 once. The two compute the same exact products (bf16 x bf16 is exact
// in f32) and differ only in f32 summation order: over these 27-term sums of values below 3 in
// magnitude that is at most 27 * 27 * 3 * 2^-24 < 1.5e-4 before the rounding, so after it they
// agree to one bf16 step (2^-8 relative) plus that. f16 (and bf16 on other CPUs) casts around
// the convolution and returns f32: exactly the f32 op on rounded operands.
TEST(Autocast, Conv2dEqualsTheF32OpOnRoundedOperands) {
  Tensor x = test::random_tensor({2, 3, 9, 9}, 1), w = test::random_tensor({4, 3, 3, 3}, 2);
  Tensor b = test::random_tensor({4}, 3);
  Conv2dOptions o;
  o.padding = {1, 1};
  o.stride = {2, 1};
  for (DType d : {DType::bf16, DType::f16}) {
    Tensor y;
    {
      AutocastGuard a(d);
      y = conv2d(x, w, b, o);
    }
    const Tensor expected = conv2d(rounded(x, d), rounded(w, d), b, o);
    if (d == DType::bf16 && backend_for(Device::cpu()).bf16_activations) {
      EXPECT_EQ(y.dtype(), DType::bf16);
      const std::vector<float> got = y.to_vector(), want = expected.to_vector();
      ASSERT_EQ(got.size(), want.size());
      int exact = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], std::ldexp(std::fabs(want[i]), -8) + 1.5e-4) << i;
        exact += got[i] == rounded(Tensor::from_vector({want[i]}, {1}), d).item();
      }
      EXPECT_GT(exact, int(got.size()) * 9 / 10) << "most outputs are the f32 value rounded";
    } else {
      EXPECT_EQ(y.dtype(), DType::f32);
      EXPECT_TRUE(bitwise_equal(y, expected)) << dtype_name(d);
    }
    EXPECT_FALSE(bitwise_equal(y.to(DType::f32), conv2d(x, w, b, o))) << "autocast changed nothing";
  }
}

TEST(Autocast, LinearEqualsTheF32OpOnRoundedOperands) {
  Tensor x = test::random_tensor({5, 33}, 4), w = test::random_tensor({7, 33}, 5);
  Tensor b = test::random_tensor({7}, 6);
  Tensor y;
  {
    AutocastGuard a;
    y = linear(x, w, b);
  }
  EXPECT_TRUE(bitwise_equal(y, linear(rounded(x, DType::bf16), rounded(w, DType::bf16), b)));
  EXPECT_FALSE(bitwise_equal(y, linear(x, w, b)));
  // A product of bf16 values is exact in f32: a 1-term "sum" equals the double product.
  Tensor x1 = test::random_tensor({1, 1}, 7), w1 = test::random_tensor({1, 1}, 8), y1;
  {
    AutocastGuard a;
    y1 = linear(x1, w1, Tensor());
  }
  const double px = rounded(x1, DType::bf16).item(), pw = rounded(w1, DType::bf16).item();
  EXPECT_EQ(double(y1.item()), px * pw);
}

TEST(Autocast, GradientsReachTheF32Weights) {
  Tensor x = halves({2, 2, 6, 6}, 9), w = halves({3, 2, 3, 3}, 10);
  Tensor b = halves({3}, 11);
  Tensor lx = sixteenths({4, 12}, 12), lw = sixteenths({5, 12}, 13);
  for (Tensor* t : {&x, &w, &b, &lx, &lw}) t->set_requires_grad(true);
  {
    AutocastGuard a;
    Tensor y = conv2d(x, w, b);
    Tensor z = linear(lx, lw, Tensor());
    backward(add(sum(mul(y, y)), sum(mul(z, z))));
  }
  for (const Tensor* t : {&x, &w, &b, &lx, &lw}) {
    ASSERT_TRUE(t->grad().defined());
    EXPECT_EQ(t->grad().dtype(), DType::f32);
    EXPECT_GT(l2_norm(t->grad()).item(), 0.f);
  }
  // Finite differences through autocast: with every value a multiple of 1/16 (1/2 for the
  // convolution) and steps of that size, the rounded operands are the values themselves; the
  // analytic gradient passes the bf16 cast (dy rounded to 8 bits, 2^-9 relative, and on the CPU
  // the convolution's dx too), hence the loose tolerance.
  test::GradCheckOptions g;
  g.eps = 1.0 / 2;
  g.rtol = 2e-2;
  g.atol = 2e-2;
  test::expect_gradients_match(
      [](const std::vector<Tensor>& in) {
        AutocastGuard a;
        return conv2d(in[0], in[1], in[2]);
      },
      {x.detach().set_requires_grad(true), w.detach().set_requires_grad(true),
       b.detach().set_requires_grad(true)},
      g);
  g.eps = 1.0 / 16;
  test::expect_gradients_match(
      [](const std::vector<Tensor>& in) {
        AutocastGuard a;
        return linear(in[0], in[1], Tensor());
      },
      {lx.detach().set_requires_grad(true), lw.detach().set_requires_grad(true)}, g);
}

}  // namespace
}  // namespace dplab
