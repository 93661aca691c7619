// softmax, log_softmax and cross-entropy with label smoothing: hand-computed values, gradients
// against finite differences, and the out-of-range target error.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_gradients_match;
using test::random_tensor;

TEST(Loss, LogSoftmaxAndSoftmaxHandComputed) {
  Tensor x = Tensor::from_vector({1, 2, 3, 1000, 1000, 1000}, {2, 3});
  const float lse = 3.f + std::log(1.f + std::exp(-1.f) + std::exp(-2.f));
  auto l = log_softmax(x).to_vector();
  EXPECT_NEAR(l[0], 1 - lse, 1e-5f);
  EXPECT_NEAR(l[2], 3 - lse, 1e-5f);
  EXPECT_NEAR(l[4], -std::log(3.f), 1e-5f);  // large logits: no overflow
  auto s = softmax(x).to_vector();
  EXPECT_NEAR(s[0] + s[1] + s[2], 1.f, 1e-6f);
  EXPECT_NEAR(s[2], std::exp(3 - lse), 1e-6f);
  // along dim 0
  auto s0 = softmax(x, 0).to_vector();
  EXPECT_NEAR(s0[0], 0.f, 1e-6f);
  EXPECT_NEAR(s0[3], 1.f, 1e-6f);
}

TEST(Loss, CrossEntropyHandComputed) {
  Tensor logits = Tensor::from_vector({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor target = Tensor::from_vector_i64({2, 0}, {2});
  const double lse0 = 3.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
  const double nll0 = lse0 - 3.0, nll1 = std::log(3.0);
  EXPECT_NEAR(cross_entropy(logits, target).item(), (nll0 + nll1) / 2, 1e-6);
  // s = 0.1: row loss = 0.9·nll + 0.1·(lse − mean logits)
  const double r0 = 0.9 * nll0 + 0.1 * (lse0 - 2.0), r1 = nll1;
  EXPECT_NEAR(cross_entropy(logits, target, 0.1f).item(), (r0 + r1) / 2, 1e-6);
}

TEST(Loss, CrossEntropyGradientIsSoftmaxMinusTarget) {
  Tensor logits = Tensor::from_vector({1, 2, 3}, {1, 3});
  logits.set_requires_grad(true);
  backward(cross_entropy(logits, Tensor::from_vector_i64({1}, {1}), 0.3f));
  auto p = softmax(logits.detach()).to_vector();
  auto g = logits.grad().to_vector();
  EXPECT_NEAR(g[0], p[0] - 0.1f, 1e-6f);
  EXPECT_NEAR(g[1], p[1] - 0.8f, 1e-6f);
  EXPECT_NEAR(g[2], p[2] - 0.1f, 1e-6f);
}

TEST(Loss, Gradients) {
  Tensor target = Tensor::from_vector_i64({0, 4, 2, 4}, {4});
  for (float s : {0.f, 0.1f}) {
    SCOPED_TRACE(s);
    Tensor x = random_tensor({4, 5}, 1, -2.f, 2.f);
    x.set_requires_grad(true);
    expect_gradients_match(
        [&](const std::vector<Tensor>& v) { return cross_entropy(v[0], target, s); }, {x},
        {.eps = 1e-3, .atol = 2e-3});
  }
  for (int dim : {-1, 0, 1}) {
    SCOPED_TRACE(dim);
    Tensor x = random_tensor({3, 4, 2}, 2, -2.f, 2.f);
    x.set_requires_grad(true);
    expect_gradients_match([&](const std::vector<Tensor>& v) { return log_softmax(v[0], dim); },
                           {x}, {.eps = 1e-3, .atol = 2e-3});
    expect_gradients_match([&](const std::vector<Tensor>& v) { return softmax(v[0], dim); }, {x},
                           {.eps = 1e-3, .atol = 2e-3});
  }
}

TEST(Loss, OutOfRangeTargetNamesTheIndex) {
  Tensor logits = Tensor::zeros({3, 4});
  for (int64_t bad : {4, -1}) {
    try {
      cross_entropy(logits, Tensor::from_vector_i64({0, 3, bad}, {3}));
      FAIL() << "expected an error for target " << bad;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("target[2] = " + std::to_string(bad)), std::string::npos) << m;
      EXPECT_NE(m.find("[0, 4)"), std::string::npos) << m;
    }
  }
  EXPECT_THROW(cross_entropy(logits, Tensor::from_vector({0, 1, 2}, {3})), Error);  // f32 target
  EXPECT_THROW(cross_entropy(logits, Tensor::from_vector_i64({0, 1}, {2})), Error);
  // the reference kernel checks too
  Tensor loss = Tensor::empty({}), lse = Tensor::empty({3});
  EXPECT_THROW(ref_backend().loss.cross_entropy_forward(
                   logits, Tensor::from_vector_i64({0, 9, 1}, {3}), 0.f, loss, lse),
               Error);
}

}  // namespace
}  // namespace dplab
