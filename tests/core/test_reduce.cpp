// Reductions: forward against hand-computed values, backward against finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_gradients_match;
using test::random_tensor;

Tensor leaf(const Shape& s, uint64_t seed) {
  Tensor t = random_tensor(s, seed);
  t.set_requires_grad(true);
  return t;
}

TEST(Reduce, SumAndMeanHandComputed) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = sum(x);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_FLOAT_EQ(s.item(), 21.f);
  EXPECT_FLOAT_EQ(mean(x).item(), 3.5f);
  EXPECT_EQ(sum(x, {0}).to_vector(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(sum(x, {1}).to_vector(), (std::vector<float>{6, 15}));
  EXPECT_EQ(sum(x, {-1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(sum(x, {0, 1}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(mean(x, {0}).to_vector(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  // non-contiguous input
  EXPECT_EQ(sum(x.transpose(0, 1), {1}).to_vector(), (std::vector<float>{5, 7, 9}));
  // per-channel sum of NCHW
  Tensor y = Tensor::ones({2, 3, 2, 2});
  EXPECT_EQ(sum(y, {0, 2, 3}).to_vector(), (std::vector<float>{8, 8, 8}));
  EXPECT_THROW(sum(x, {2}), Error);
}

TEST(Reduce, MaxArgmaxNorms) {
  Tensor x = Tensor::from_vector({1, 7, 3, 9, -2, 9}, {2, 3});
  EXPECT_FLOAT_EQ(max(x).item(), 9.f);
  EXPECT_EQ(argmax(x, 1).to_vector_i64(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmax(x, 0).to_vector_i64(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(argmax(x, -1).shape(), (Shape{2}));
  Tensor v = Tensor::from_vector({3, -4}, {2});
  EXPECT_FLOAT_EQ(l2_norm(v).item(), 5.f);
  EXPECT_DOUBLE_EQ(sum_of_squares(v), 25.0);
  EXPECT_DOUBLE_EQ(sum_of_squares(Tensor::from_vector({1, 2}, {2}, DType::bf16)), 5.0);
  // NaN is the maximum, like PyTorch
  EXPECT_EQ(argmax(Tensor::from_vector({1, NAN, 5}, {3}), 0).to_vector_i64()[0], 1);
}

TEST(Reduce, MaxGradientGoesToFirstMaximum) {
  Tensor x = Tensor::from_vector({1, 5, 5, 2}, {2, 2});
  x.set_requires_grad(true);
  backward(max(x));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 1, 0, 0}));
}

TEST(Reduce, Gradients) {
  expect_gradients_match([](const std::vector<Tensor>& v) { return sum(v[0]); }, {leaf({3, 4}, 1)});
  expect_gradients_match([](const std::vector<Tensor>& v) { return mean(v[0]); },
                         {leaf({3, 4}, 2)});
  expect_gradients_match(
      [](const std::vector<Tensor>& v) {
        return sum(v[0], {0, 2});
      },
      {leaf({2, 3, 4}, 3)});
  expect_gradients_match([](const std::vector<Tensor>& v) { return mean(v[0], {1}, true); },
                         {leaf({2, 3, 4}, 4)});
  expect_gradients_match([](const std::vector<Tensor>& v) { return sum(v[0], {-1}); },
                         {leaf({5, 3}, 5)});
  expect_gradients_match([](const std::vector<Tensor>& v) { return max(v[0]); }, {leaf({7}, 6)});
  expect_gradients_match([](const std::vector<Tensor>& v) { return l2_norm(v[0]); },
                         {leaf({2, 5}, 7)}, {.eps = 1e-3});
}

TEST(Reduce, SumToReducesBroadcastDims) {
  Tensor g = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(sum_to(g, {3}).to_vector(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(sum_to(g, {2, 1}).to_vector(), (std::vector<float>{6, 15}));
  EXPECT_EQ(sum_to(g, {}).to_vector(), (std::vector<float>{21}));
  EXPECT_TRUE(sum_to(g, {2, 3}).is_same(g));
  EXPECT_THROW(sum_to(g, {2}), Error);
}

}  // namespace
}  // namespace dplab
