// Training results do not depend on the OpenMP thread count beyond float rounding: a few SGD
// steps of mnist_cnn and of a ResNet (the fast oneDNN paths: blocked-layout convolutions,
// pooling, GEMM, batch norm, the element-wise loops) with one thread and with two give the same
// parameters and losses. Winograd convolutions are the stated exception (see below).
#include <gtest/gtest.h>
#include <omp.h>

#include <optional>
#include <string>
#include <vector>

#include "common/harness.h"
#include "dplab/core/backend.h"
#include "dplab/core/cpu/conv_algorithm.h"
#include "dplab/core/ops/conv.h"
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

// The ResNet paths with direct convolutions: blocked activations, batch norm fused with ReLU,
// the residual add_relu (resnet18 with the CIFAR stem, 10 classes, 16x16 inputs). Every kernel
// on this path computes each output element with the same sequence of operations whatever the
// thread count, except for reductions that oneDNN splits across threads (weight gradients over
// the batch): these agree to float rounding, so the parameters after one step agree to 1e-10
// normalised error (1e-5 relative RMS; measured 3e-18 on an AVX2 AMD EPYC).
//
// After that the parameters differ by rounding, and the second step's gradient is not a
// continuous function of them: at a ReLU or max-pool kink it jumps. The losses are continuous
// (ReLU and max-pool are), so each step's loss agrees to 1e-5 relative, but the parameters after
// two steps are not compared: on an AMD EPYC with AVX2 only (no AVX-512), one pre-activation of
// the 2-thread run took the other side of a kink, and its parameters after two steps differed
// from the 1-thread run's by 4.6e-10 normalised error (max 6.3e-5). Moving every input by one
// ulp at 2 threads gave the same 4.6e-10, while at 1 thread it moved them by 6.7e-14. That is a
// discrete event of the data, not a rounding bound (on AVX-512 CPUs no kink was crossed).
//
// Winograd convolutions (the default for 3x3 stride-1) are left out of this comparison, for a
// measured reason. oneDNN blocks their transformed-domain sums by the thread count and the CPU's
// cache sizes, so one and two threads may round differently; each convolution stays as accurate
// as the reference requires (4e-13 normalised error at both thread counts, see
// WinogradConvolutionsMatchTheReferenceAtOneAndTwoThreads), but this two-step trajectory on 4
// images of 16x16 is ill-conditioned when it runs through Winograd: on an AMD EPYC (Zen 4)
// moving every input by one ulp moved the parameters by 4.4e-6 normalised error with Winograd
// (2.7e-14 with direct convolutions), and 2 against 1 thread by 4.2e-9 (direct: exactly 0). No
// tolerance argued from the arithmetic separates such a difference from a defect, so the
// trajectory is compared on the direct path, where the result does not depend on the thread
// count, and Winograd is checked per convolution at each thread count plus for bitwise
// reproducibility at a fixed one. (On an Intel Xeon the Winograd blockings of 1 and 2 threads
// happened to coincide.) Runs are therefore bitwise reproducible for a fixed thread count.
Trained train_resnet(int threads, bool winograd, int steps = 2) {
  const bool saved = cpu_winograd_enabled();
  set_cpu_winograd(winograd);
  Trained t = train("resnet18_cifar", threads, 4, 3, 16, steps);
  set_cpu_winograd(saved);
  return t;
}

TEST(ThreadInvariance, ResNetStepsAgreeWithOneAndTwoThreads) {
  const Trained one = train_resnet(1, false), two = train_resnet(2, false);
  for (size_t k = 0; k < one.losses.size(); ++k)
    EXPECT_NEAR(one.losses[k], two.losses[k], 1e-5 * std::abs(one.losses[k])) << "step " << k;
  EXPECT_EQ(test::max_abs_diff(one.params, train_resnet(1, false).params), 0.0)
      << "not deterministic";
  test::expect_close(train_resnet(2, false, 1).params, train_resnet(1, false, 1).params, 1e-10,
                     "resnet18 parameters after one step, 2 vs 1 threads");
}

TEST(ThreadInvariance, ResNetWinogradStepsAreReproducibleAtEachThreadCount) {
  for (int threads : {1, 2}) {
    const Trained a = train_resnet(threads, true), b = train_resnet(threads, true);
    EXPECT_EQ(test::max_abs_diff(a.params, b.params), 0.0) << threads << " thread(s)";
  }
}

// One ResNet-sized 3x3 stride-1 convolution (Winograd applies), forward and both gradients, at
// one and at two threads, each against the reference loops (core/cpu/ref) with the op table's
// tolerance for convolutions (tests/common/op_case_inputs.h: kGemmTol, 1e-6 normalised error,
// where a wrong kernel is off by 1e-4 or more).
struct ConvPass {
  Tensor y, dx, dw;
};

ConvPass conv_pass(const Backend* backend, int threads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::optional<BackendOverride> o;
  if (backend) o.emplace(*backend);
  Tensor x = test::random_tensor({4, 32, 12, 12}, 11, -1.f, 1.f);
  Tensor w = test::random_tensor({32, 32, 3, 3}, 12, -0.2f, 0.2f);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Conv2dOptions opt;
  opt.padding = {1, 1};
  Tensor y = conv2d(x, w, Tensor(), opt);
  backward(y, test::random_tensor(y.shape(), 13, -1.f, 1.f));
  omp_set_num_threads(saved);
  return {y.detach(), x.grad(), w.grad()};
}

TEST(ThreadInvariance, WinogradConvolutionsMatchTheReferenceAtOneAndTwoThreads) {
  const ConvPass ref = conv_pass(&ref_backend(), 1);
  const bool saved = cpu_winograd_enabled();
  set_cpu_winograd(true);
  for (int threads : {1, 2}) {
    const ConvPass c = conv_pass(nullptr, threads);
    const std::string at = " at " + std::to_string(threads) + " thread(s)";
    test::expect_close(c.y, ref.y, 1e-6, "forward" + at);
    test::expect_close(c.dx, ref.dx, 1e-6, "input gradient" + at);
    test::expect_close(c.dw, ref.dw, 1e-6, "weight gradient" + at);
  }
  set_cpu_winograd(saved);
}

}  // namespace
}  // namespace dplab
