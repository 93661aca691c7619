// Every case of the shared op table (tests/common/op_cases.h) on cuda:0: the same assertions as
// tests/core/test_op_cases.cpp (parity of outputs and input gradients against the reference
// kernels by normalised error, finite-difference gradients evaluated on the device), one gtest
// per case. Each reports itself skipped, with the reason, when no CUDA device is visible.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include "common/op_cases.h"

namespace dplab {
namespace {

using test::OpCase;

class CudaOps : public testing::TestWithParam<OpCase> {};

TEST_P(CudaOps, MatchesRefAndFiniteDifferences) {
  DPLAB_CUDA_TEST_GATE();
  const OpCase& c = GetParam();
  if (const std::string why = test::op_case_unsupported(c, Device::cuda(0)); !why.empty())
    GTEST_SKIP() << why;
  {
    SCOPED_TRACE("parity with ref");
    test::expect_op_case_matches_ref(c, Device::cuda(0));
  }
  {
    SCOPED_TRACE("finite differences");
    test::expect_op_case_gradients(c, Device::cuda(0));
  }
}

INSTANTIATE_TEST_SUITE_P(OpCases, CudaOps, testing::ValuesIn(test::op_cases()),
                         [](const testing::TestParamInfo<OpCase>& i) { return i.param.name; });

// Outputs and gradients of a case stay on the device: nothing silently falls back to the host.
TEST(CudaOps, OutputsAndGradientsLiveOnTheDevice) {
  DPLAB_CUDA_TEST_GATE();
  const Device d = Device::cuda(0);
  Tensor x = test::leaf_on(test::random_tensor({2, 3, 6, 6}, 1), d).set_requires_grad(true);
  Tensor w = test::leaf_on(test::random_tensor({4, 3, 3, 3}, 2), d).set_requires_grad(true);
  Conv2dOptions o;
  o.padding = {1, 1};
  Tensor y = sum(relu(conv2d(x, w, Tensor(), o)));
  EXPECT_EQ(y.device(), d);
  backward(y);
  ASSERT_TRUE(x.grad().defined() && w.grad().defined());
  EXPECT_EQ(x.grad().device(), d);
  EXPECT_EQ(w.grad().device(), d);
}

// Integer counters (BatchNorm's num_batches_tracked) are incremented on the device, exactly.
TEST(CudaOps, AddIntIsExactOnTheDevice) {
  DPLAB_CUDA_TEST_GATE();
  const Device d = Device::cuda(0);
  const int64_t big = int64_t(1) << 40;
  Tensor c = Tensor::from_vector_i64({big, -3, INT64_MAX, 7}, {4}).to(d);
  add_int_(c, 2);
  EXPECT_EQ(c.to_vector_i64(), (std::vector<int64_t>{big + 2, -1, INT64_MIN + 1, 9}));
  Tensor m = Tensor::from_vector_i64({10, 20, 30, 40}, {2, 2}).to(d);
  Tensor col = m.select(1, 0);
  add_int_(col, -5);
  EXPECT_EQ(m.to_vector_i64(), (std::vector<int64_t>{5, 20, 25, 40}));
  Tensor i = Tensor::from_vector_i64({1, 2}, {2}).to(DType::i32).to(d);
  add_int_(i, 40);
  EXPECT_EQ(i.to_vector_i64(), (std::vector<int64_t>{41, 42}));
}

}  // namespace
}  // namespace dplab
