// Element-wise ops: forward against hand-computed values, backward against finite differences
// (including broadcasting), in-place ops, and error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_gradients_match;
using test::random_tensor;

Tensor leaf(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = random_tensor(s, seed, lo, hi);
  t.set_requires_grad(true);
  return t;
}

void expect_values(const Tensor& t, const std::vector<float>& want, float tol = 1e-6f) {
  auto v = t.to_vector();
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], tol) << "element " << i;
}

TEST(Elementwise, BinaryForwardHandComputed) {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector({10, 20, 30}, {3});
  expect_values(add(a, b), {11, 22, 33, 14, 25, 36});
  expect_values(sub(a, b), {-9, -18, -27, -6, -15, -24});
  expect_values(mul(a, b), {10, 40, 90, 40, 100, 180});
  expect_values(div(a, b), {0.1f, 0.1f, 0.1f, 0.4f, 0.25f, 0.2f});
  // column broadcast [2,1] and both-sides broadcast [2,1] x [1,3]
  Tensor c = Tensor::from_vector({100, 200}, {2, 1});
  expect_values(add(a, c), {101, 102, 103, 204, 205, 206});
  Tensor r = Tensor::from_vector({1, 2, 3}, {1, 3});
  Tensor o = mul(c, r);
  EXPECT_EQ(o.shape(), (Shape{2, 3}));
  expect_values(o, {100, 200, 300, 200, 400, 600});
  // scalar (shape {}) operand
  expect_values(sub(Tensor::scalar(1.f), b), {-9, -19, -29});
}

TEST(Elementwise, UnaryForwardHandComputed) {
  Tensor x = Tensor::from_vector({-2, -0.5f, 0, 1, 4}, {5});
  expect_values(neg(x), {2, 0.5f, 0, -1, -4});
  expect_values(abs(x), {2, 0.5f, 0, 1, 4});
  expect_values(square(x), {4, 0.25f, 0, 1, 16});
  expect_values(relu(x), {0, 0, 0, 1, 4});
  expect_values(add_scalar(x, 1.5f), {-0.5f, 1, 1.5f, 2.5f, 5.5f});
  expect_values(mul_scalar(x, -2.f), {4, 1, 0, -2, -8});
  expect_values(exp(x), {std::exp(-2.f), std::exp(-0.5f), 1, std::exp(1.f), std::exp(4.f)}, 1e-4f);
  expect_values(sigmoid(x), {0.11920292f, 0.37754067f, 0.5f, 0.73105858f, 0.98201379f});
  expect_values(tanh(x), {-0.96402758f, -0.46211716f, 0, 0.76159416f, 0.99932930f});
  Tensor p = Tensor::from_vector({1, 4, 9}, {3});
  expect_values(sqrt(p), {1, 2, 3});
  expect_values(log(p), {0, std::log(4.f), std::log(9.f)});
  // sigmoid stays finite and exact in both tails
  expect_values(sigmoid(Tensor::from_vector({-100, 100}, {2})), {0, 1});
  EXPECT_TRUE(std::isnan(relu(Tensor::from_vector({NAN}, {1})).item()));
}

TEST(Elementwise, BinaryGradientsWithBroadcasting) {
  for (auto [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {{2, 3}, {2, 3}}, {{2, 3, 4}, {3, 1}}, {{4}, {2, 3, 4}}, {{2, 1}, {1, 3}}, {{3}, {}}}) {
    SCOPED_TRACE(shape_str(sa) + " op " + shape_str(sb));
    auto f_add = [](const std::vector<Tensor>& v) { return add(v[0], v[1]); };
    auto f_sub = [](const std::vector<Tensor>& v) { return sub(v[0], v[1]); };
    auto f_mul = [](const std::vector<Tensor>& v) { return mul(v[0], v[1]); };
    auto f_div = [](const std::vector<Tensor>& v) { return div(v[0], v[1]); };
    expect_gradients_match(f_add, {leaf(sa, 1), leaf(sb, 2)});
    expect_gradients_match(f_sub, {leaf(sa, 3), leaf(sb, 4)});
    expect_gradients_match(f_mul, {leaf(sa, 5), leaf(sb, 6)});
    expect_gradients_match(f_div, {leaf(sa, 7), leaf(sb, 8, 1.f, 2.f)});
  }
}

TEST(Elementwise, BroadcastGradientIsSummed) {
  // d/db sum(a + b) for b broadcast over 4 rows = 4 per element.
  Tensor a = leaf({4, 3}, 1), b = leaf({3}, 2);
  backward(sum(add(a, b)));
  expect_values(b.grad(), {4, 4, 4});
  expect_values(a.grad(), std::vector<float>(12, 1.f));
}

TEST(Elementwise, UnaryGradients) {
  const Shape s{3, 5};
  auto check = [&](Tensor (*op)(const Tensor&), float lo, float hi, const char* name) {
    SCOPED_TRACE(name);
    expect_gradients_match([op](const std::vector<Tensor>& v) { return op(v[0]); },
                           {leaf(s, 11, lo, hi)}, {.eps = 1e-3});
  };
  check(neg, -1, 1, "neg");
  check(exp, -1, 1, "exp");
  check(log, 0.5f, 2, "log");
  check(sqrt, 0.5f, 2, "sqrt");
  check(square, -1, 1, "square");
  check(sigmoid, -3, 3, "sigmoid");
  check(tanh, -2, 2, "tanh");
  // abs and relu: keep inputs away from the kink at 0 so finite differences are valid
  check(abs, 0.1f, 1, "abs+");
  check(abs, -1, -0.1f, "abs-");
  Tensor r = Tensor::from_vector({-1, -0.5f, 0.3f, 0.8f, -0.2f, 2}, {6});
  r.set_requires_grad(true);
  expect_gradients_match([](const std::vector<Tensor>& v) { return relu(v[0]); }, {r});
  expect_gradients_match(
      [](const std::vector<Tensor>& v) { return mul_scalar(add_scalar(v[0], 2.f), 3.f); },
      {leaf(s, 12)});
}

TEST(Elementwise, ReluGradientAtZeroIsZero) {
  Tensor x = Tensor::from_vector({-1, 0, 1}, {3});
  x.set_requires_grad(true);
  backward(sum(relu(x)));
  expect_values(x.grad(), {0, 0, 1});
}

TEST(Elementwise, InPlaceOpsRecordNothing) {
  Tensor acc = Tensor::from_vector({1, 2, 3}, {3});
  add_(acc, Tensor::from_vector({1, 1, 1}, {3}), 2.f);
  expect_values(acc, {3, 4, 5});
  mul_(acc, 0.5f);
  expect_values(acc, {1.5f, 2, 2.5f});
  EXPECT_FALSE(acc.requires_grad());
  // bf16 addend accumulates into f32
  add_(acc, Tensor::from_vector({2, 2, 2}, {3}, DType::bf16));
  expect_values(acc, {3.5f, 4, 4.5f});
}

TEST(Elementwise, GradientsAccumulateAcrossUses) {
  // x used twice: d/dx sum(x*x + x) = 2x + 1
  Tensor x = Tensor::from_vector({1, -2}, {2});
  x.set_requires_grad(true);
  backward(sum(add(mul(x, x), x)));
  expect_values(x.grad(), {3, -3});
}

TEST(Elementwise, ErrorsNameTheProblem) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  try {
    add(a, b);
    FAIL() << "expected a broadcast error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(relu(Tensor::zeros({2}, DType::i64)), Error);
  EXPECT_THROW(add_(a, Tensor::zeros({3, 2})), Error);
}

TEST(Elementwise, NoGradRecordsNothing) {
  Tensor x = leaf({3}, 1);
  NoGradGuard ng;
  Tensor y = exp(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

}  // namespace
}  // namespace dplab
