// Training results do not depend on the OpenMP thread count beyond float rounding: a few SGD
// steps of mnist_cnn and of a ResNet (the fast oneDNN paths: blocked-layout convolutions,
// Winograd, pooling, GEMM, batch norm, the element-wise loops) with one thread and with two give
// the same parameters and losses.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "common/harness.h"
#include "dplab/core/param_arena.h"
#include "dplab/layers/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

struct Trained {
  Tensor params;
  std::vector<float> losses;
};

// `steps` SGD steps of `model` on one fixed batch of `n` images [c, hw, hw].
Trained train(const std::string& model, int threads, int64_t n, int64_t c, int64_t hw,
              int steps = 4) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto m = make_model(model, 3);
  ParamArena arena(m->named_parameters());
  SGD sgd(arena, {.lr = 0.05, .momentum = 0.9, .nesterov = true});
  const Tensor x = test::random_tensor({n, c, hw, hw}, 7, 0.f, 1.f);
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = (i * 7) % 10;
  const Tensor target = Tensor::from_vector_i64(labels, {n});
  CrossEntropyLoss loss;
  Trained out;
  for (int k = 0; k < steps; ++k) {
    sgd.zero_grad();
    Tensor l = loss((*m)(x), target);
    backward(l);
    sgd.step();
    out.losses.push_back(l.item());
  }
  out.params = arena.params().clone();
  omp_set_num_threads(saved);
  return out;
}

Trained train_mnist_cnn(int threads) {
  return train("mnist_cnn", threads, 32, 1, 28);
}

TEST(ThreadInvariance, MnistCnnStepsAgreeWithOneAndTwoThreads) {
  const Trained one = train_mnist_cnn(1), two = train_mnist_cnn(2);
  ASSERT_EQ(one.losses.size(), two.losses.size());
  for (size_t k = 0; k < one.losses.size(); ++k)
    EXPECT_NEAR(one.losses[k], two.losses[k], 1e-5 * std::abs(one.losses[k])) << "step " << k;
  // The steps moved the parameters (else agreement would prove nothing)...
  const Trained again = train_mnist_cnn(1);
  EXPECT_EQ(test::max_abs_diff(one.params, again.params), 0.0) << "not deterministic";
  EXPECT_GT(one.losses.front() - one.losses.back(), 0.01f);
  // ...and the two thread counts end at the same parameters up to rounding.
  test::expect_close(two.params, one.params, 1e-10, "parameters after 4 steps, 2 vs 1 threads");
}

// The ResNet paths: blocked activations, Winograd 3x3 convolutions, batch norm fused with ReLU,
// the residual add_relu (resnet18 with the CIFAR stem, 10 classes, 16x16 inputs).
TEST(ThreadInvariance, ResNetStepsAgreeWithOneAndTwoThreads) {
  auto run = [](int threads) { return train("resnet18_cifar", threads, 4, 3, 16, 2); };
  const Trained one = run(1), two = run(2);
  for (size_t k = 0; k < one.losses.size(); ++k)
    EXPECT_NEAR(one.losses[k], two.losses[k], 1e-5 * std::abs(one.losses[k])) << "step " << k;
  EXPECT_EQ(test::max_abs_diff(one.params, run(1).params), 0.0) << "not deterministic";
  test::expect_close(two.params, one.params, 1e-10, "resnet18 parameters, 2 vs 1 threads");
}

}  // namespace
}  // namespace dplab
