// Batch normalisation: hand-computed forward (train and eval), running statistics over two
// steps, gradients against finite differences in both modes, and argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_gradients_match;
using test::random_tensor;

TEST(BatchNorm, TrainForwardHandComputed) {
  // one channel, values 1..4: mean 2.5, biased var 1.25
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {2, 1, 1, 2});
  Tensor w = Tensor::from_vector({2}, {1}), b = Tensor::from_vector({0.5f}, {1});
  Tensor rm = Tensor::zeros({1}), rv = Tensor::ones({1});
  Tensor y = batch_norm2d(x, w, b, rm, rv, true, 0.1f, 1e-5f);
  const float is = 1.f / std::sqrt(1.25f + 1e-5f);
  auto v = y.to_vector();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(v[i], (i + 1 - 2.5f) * is * 2 + 0.5f, 1e-5f);
}

TEST(BatchNorm, RunningStatisticsAfterTwoSteps) {
  Tensor rm = Tensor::zeros({2}), rv = Tensor::ones({2});
  // channel 0: {1,2,3,4}, channel 1: {0,0,0,8}; N=2, H=1, W=2
  Tensor x1 = Tensor::from_vector({1, 2, 0, 0, 3, 4, 0, 8}, {2, 2, 1, 2});
  batch_norm2d(x1, Tensor(), Tensor(), rm, rv, true, 0.1f, 1e-5f);
  // step 1: mean (2.5, 2), unbiased var (5/3, 16)
  EXPECT_NEAR(rm.to_vector()[0], 0.25f, 1e-6f);
  EXPECT_NEAR(rm.to_vector()[1], 0.2f, 1e-6f);
  EXPECT_NEAR(rv.to_vector()[0], 0.9f + 0.1f * 5.f / 3.f, 1e-6f);
  EXPECT_NEAR(rv.to_vector()[1], 0.9f + 1.6f, 1e-6f);
  // step 2: channel 0: {0,0,2,2} mean 1 var 4/3; channel 1: {1,1,1,1} mean 1 var 0
  Tensor x2 = Tensor::from_vector({0, 0, 1, 1, 2, 2, 1, 1}, {2, 2, 1, 2});
  batch_norm2d(x2, Tensor(), Tensor(), rm, rv, true, 0.1f, 1e-5f);
  EXPECT_NEAR(rm.to_vector()[0], 0.9f * 0.25f + 0.1f, 1e-6f);
  EXPECT_NEAR(rm.to_vector()[1], 0.9f * 0.2f + 0.1f, 1e-6f);
  EXPECT_NEAR(rv.to_vector()[0], 0.9f * (0.9f + 0.5f / 3.f) + 0.1f * 4.f / 3.f, 1e-6f);
  EXPECT_NEAR(rv.to_vector()[1], 0.9f * 2.5f, 1e-6f);
}

TEST(BatchNorm, EvalUsesRunningStatistics) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {1, 2, 1, 2});
  Tensor rm = Tensor::from_vector({1, 2}, {2}), rv = Tensor::from_vector({4, 0.25f}, {2});
  Tensor w = Tensor::from_vector({1, 3}, {2}), b = Tensor::from_vector({0, -1}, {2});
  Tensor y = batch_norm2d(x, w, b, rm, rv, false, 0.1f, 1e-12f);
  auto v = y.to_vector();
  EXPECT_NEAR(v[0], 0.f, 1e-5f);
  EXPECT_NEAR(v[1], 0.5f, 1e-5f);
  EXPECT_NEAR(v[2], (3 - 2) / 0.5f * 3 - 1, 1e-4f);
  EXPECT_NEAR(v[3], (4 - 2) / 0.5f * 3 - 1, 1e-4f);
  EXPECT_EQ(rm.to_vector(), (std::vector<float>{1, 2}));  // eval leaves stats alone
}

TEST(BatchNorm, TrainGradients) {
  Tensor x = random_tensor({3, 2, 3, 2}, 1, -1.f, 2.f);
  Tensor w = random_tensor({2}, 2, 0.5f, 1.5f), b = random_tensor({2}, 3);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  b.set_requires_grad(true);
  expect_gradients_match(
      [](const std::vector<Tensor>& v) {
        Tensor rm = Tensor::zeros({2}), rv = Tensor::ones({2});
        return batch_norm2d(v[0], v[1], v[2], rm, rv, true);
      },
      {x, w, b}, {.eps = 1e-3, .atol = 5e-3});
}

TEST(BatchNorm, EvalGradients) {
  Tensor x = random_tensor({2, 3, 2, 2}, 4);
  Tensor w = random_tensor({3}, 5, 0.5f, 1.5f), b = random_tensor({3}, 6);
  Tensor rm = random_tensor({3}, 7), rv = random_tensor({3}, 8, 0.5f, 2.f);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  b.set_requires_grad(true);
  expect_gradients_match(
      [&](const std::vector<Tensor>& v) { return batch_norm2d(v[0], v[1], v[2], rm, rv, false); },
      {x, w, b}, {.eps = 1e-3, .atol = 5e-3});
}

TEST(BatchNorm, NoAffineGradient) {
  Tensor x = random_tensor({4, 2, 2, 2}, 9);
  x.set_requires_grad(true);
  expect_gradients_match(
      [](const std::vector<Tensor>& v) {
        return batch_norm2d(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
      },
      {x}, {.eps = 1e-3, .atol = 5e-3});
}

TEST(BatchNorm, ArgumentErrors) {
  Tensor x = Tensor::zeros({2, 3, 2, 2});
  EXPECT_THROW(batch_norm2d(x, Tensor::ones({4}), Tensor(), Tensor(), Tensor(), true), Error);
  EXPECT_THROW(batch_norm2d(x, Tensor(), Tensor(), Tensor(), Tensor(), false), Error);
  EXPECT_THROW(
      batch_norm2d(Tensor::zeros({1, 3, 1, 1}), Tensor(), Tensor(), Tensor(), Tensor(), true),
      Error);
  EXPECT_THROW(batch_norm2d(x, Tensor(), Tensor(), Tensor::zeros({3}), Tensor(), true), Error);
}

}  // namespace
}  // namespace dplab
