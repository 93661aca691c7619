// The fast optimizer kernels against the reference loops: both run the shared functor, so the
// results must be bitwise equal, including the OpenMP path (n > 65536) and odd lengths.
#include <gtest/gtest.h>

#include <cstring>

#include "common/harness.h"

namespace dplab {
namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(OptimKernels, SgdStepCpuMatchesRefBitwise) {
  const std::vector<SgdStepArgs> cases = {
      {.lr = 0.1f},
      {.lr = 0.1f, .weight_decay = 1e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .first_step = true},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .dampening = 0.3f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true},
  };
  for (int64_t n : {1, 17, 1000, 70001}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const SgdStepArgs& a = cases[c];
      Tensor p0 = test::random_tensor({n}, 10 + n), g = test::random_tensor({n}, 20 + n);
      Tensor b0 = test::random_tensor({n}, 30 + n);
      Tensor p_ref = p0.clone(), b_ref = b0.clone(), p_cpu = p0.clone(), b_cpu = b0.clone();
      ref_backend().optim.sgd_step(p_ref, g, b_ref, a);
      cpu_backend().optim.sgd_step(p_cpu, g, b_cpu, a);
      EXPECT_TRUE(bitwise_equal(p_ref, p_cpu)) << "params, n=" << n << " case " << c;
      EXPECT_TRUE(bitwise_equal(b_ref, b_cpu)) << "buffer, n=" << n << " case " << c;
      EXPECT_FALSE(bitwise_equal(p_ref, p0)) << "the step changed nothing, case " << c;
      if (a.momentum == 0.f) {
        EXPECT_TRUE(bitwise_equal(b_ref, b0)) << "buffer touched, case " << c;
      }
    }
  }
}

TEST(OptimKernels, SgdStepSpotValues) {
  // p = 1, g = 2, buf = 3, lr 0.5, momentum 0.5, dampening 0.5, wd 0.25:
  // g' = 2 + 0.25 = 2.25, buf = 1.5 + 0.5 * 2.25 = 2.625, p = 1 - 0.5 * 2.625 = -0.3125
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::from_vector({1}, {1}), g = Tensor::from_vector({2}, {1});
    Tensor b = Tensor::from_vector({3}, {1});
    be->optim.sgd_step(p, g, b,
                       {.lr = 0.5f, .momentum = 0.5f, .dampening = 0.5f, .weight_decay = 0.25f});
    EXPECT_EQ(p.item(), -0.3125f) << be->name;
    EXPECT_EQ(b.item(), 2.625f) << be->name;
  }
}

TEST(OptimKernels, SgdStepRejectsBadOperands) {
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::zeros({4}), g = Tensor::zeros({3}), b = Tensor::zeros({4}), none;
    EXPECT_THROW(be->optim.sgd_step(p, g, b, {.lr = 0.1f}), Error) << be->name;
    Tensor g4 = Tensor::zeros({4});
    EXPECT_THROW(be->optim.sgd_step(p, g4, none, {.lr = 0.1f, .momentum = 0.9f}), Error);
    Tensor gi = Tensor::zeros({4}, DType::bf16);
    EXPECT_THROW(be->optim.sgd_step(p, gi, b, {.lr = 0.1f}), Error);
    EXPECT_NO_THROW(be->optim.sgd_step(p, g4, none, {.lr = 0.1f}));
  }
}

}  // namespace
}  // namespace dplab
