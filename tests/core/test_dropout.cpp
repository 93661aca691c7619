// Dropout: the mask is Philox draw i of (seed, stream) compared with p, the gradient is
// mask/(1-p), and the mask is the same for equal seeds and any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include "common/harness.h"

namespace dplab {
namespace {

using test::random_tensor;

TEST(Dropout, MaskFollowsPhiloxAndScales) {
  const float p = 0.4f;
  Tensor x = random_tensor({3, 7}, 1, 0.5f, 1.5f);  // nonzero, so y == 0 iff dropped
  Tensor y = dropout(x, p, true, 123, 9);
  auto xv = x.to_vector(), yv = y.to_vector();
  int dropped = 0;
  for (int64_t i = 0; i < 21; ++i) {
    const uint32_t draw = philox4x32(123, 9, i / 4).v[i % 4];
    const bool keep = philox_uniform(draw) >= p;
    EXPECT_FLOAT_EQ(yv[i], keep ? xv[i] / (1 - p) : 0.f) << "element " << i;
    dropped += !keep;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 21);
}

TEST(Dropout, DropsAboutPOfLargeTensor) {
  Tensor y = dropout(Tensor::ones({100000}), 0.3f, true, 5, 0);
  int64_t zeros = 0;
  for (float v : y.to_vector()) zeros += v == 0.f;
  EXPECT_NEAR(zeros / 1e5, 0.3, 0.01);
}

TEST(Dropout, GradientIsMaskOverKeepProbability) {
  const float p = 0.25f;
  Tensor x = random_tensor({50}, 2, 0.5f, 1.5f);
  x.set_requires_grad(true);
  Tensor y = dropout(x, p, true, 77, 3);
  backward(sum(y));
  auto yv = y.to_vector(), g = x.grad().to_vector();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(g[i], yv[i] != 0.f ? 1.f / (1 - p) : 0.f);
  // and the finite-difference check agrees (same seed on every evaluation)
  Tensor x2 = random_tensor({4, 6}, 3);
  x2.set_requires_grad(true);
  test::expect_gradients_match(
      [](const std::vector<Tensor>& v) { return dropout(v[0], 0.5f, true, 11, 1); }, {x2});
}

TEST(Dropout, IdentityInEvalOrZeroP) {
  Tensor x = random_tensor({10}, 4);
  EXPECT_TRUE(dropout(x, 0.5f, false, 1, 1).is_same(x));
  EXPECT_TRUE(dropout(x, 0.f, true, 1, 1).is_same(x));
  EXPECT_EQ(dropout(x, 1.f, true, 1, 1).to_vector(), std::vector<float>(10, 0.f));
  EXPECT_THROW(dropout(x, 1.5f, true, 1, 1), Error);
}

TEST(Dropout, DeterministicAcrossSeedsAndThreadCounts) {
  Tensor x = random_tensor({70001}, 5);  // large enough for the parallel path
  auto a = dropout(x, 0.5f, true, 42, 1).to_vector();
  auto b = dropout(x, 0.5f, true, 42, 1).to_vector();
  auto c = dropout(x, 0.5f, true, 43, 1).to_vector();
  auto d = dropout(x, 0.5f, true, 42, 2).to_vector();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  const int prev = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = dropout(x, 0.5f, true, 42, 1).to_vector();
  omp_set_num_threads(2);
  auto two = dropout(x, 0.5f, true, 42, 1).to_vector();
  omp_set_num_threads(prev);
  EXPECT_EQ(one, a);
  EXPECT_EQ(two, a);
}

}  // namespace
}  // namespace dplab
