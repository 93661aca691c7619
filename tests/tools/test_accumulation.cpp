// Gradient accumulation (train/loop/accumulation.h): two accumulated batches of B give exactly
// the SGD step of one batch of 2B on a network without BatchNorm (mnist_cnn), and the grouping
// zeroes/steps on the right iterations.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/loop/accumulation.h"

namespace dplab {
namespace {

TEST(GradAccumulation, TwoStepsOfBEqualOneStepOf2B) {
  const int64_t B = 4;
  Tensor x = test::random_tensor({2 * B, 1, 28, 28}, 11, 0.f, 1.f);
  Tensor y = Tensor::from_vector_i64({3, 1, 4, 1, 5, 9, 2, 6}, {2 * B});
  SGDOptions so;
  so.lr = 0.1;
  so.momentum = 0.9;

  auto big = make_model("mnist_cnn", 7);
  ParamArena arena_big(big->named_parameters());
  SGD opt_big(arena_big, so);
  opt_big.zero_grad();
  backward(cross_entropy((*big)(x), y));
  opt_big.step();

  auto small = make_model("mnist_cnn", 7);
  ParamArena arena_small(small->named_parameters());
  SGD opt_small(arena_small, so);
  const GradAccumulation acc(2);
  for (int64_t it = 0; it < 2; ++it) {
    if (acc.first(it)) opt_small.zero_grad();
    Tensor xs = x.slice(0, it * B, (it + 1) * B).contiguous(),
           ys = y.slice(0, it * B, (it + 1) * B).contiguous();
    backward(acc.scale(cross_entropy((*small)(xs), ys)));
    if (acc.last(it)) opt_small.step();
    EXPECT_EQ(opt_small.steps(), it == 1 ? 1 : 0);
  }
  const auto a = arena_big.params().to_vector(), b = arena_small.params().to_vector();
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0, max_step = 0;
  const auto w0 = make_model("mnist_cnn", 7);
  ParamArena arena0(w0->named_parameters());
  const auto p0 = arena0.params().to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
    max_step = std::max(max_step, double(std::abs(a[i] - p0[i])));
  }
  EXPECT_GT(max_step, 1e-4);  // the step moved the weights
  EXPECT_LT(max_diff, 1e-6);
}

TEST(GradAccumulation, GroupsByIteration) {
  const GradAccumulation acc(3);
  EXPECT_TRUE(acc.first(0) && acc.first(3) && !acc.first(1) && !acc.first(2));
  EXPECT_TRUE(acc.last(2) && acc.last(5) && !acc.last(0) && !acc.last(3));
  EXPECT_EQ(acc.scale(Tensor::scalar(6.f)).item(), 2.f);
  EXPECT_THROW(GradAccumulation(0), Error);
}

}  // namespace
}  // namespace dplab
