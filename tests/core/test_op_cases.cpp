// Every case of the shared op table (tests/common/op_cases.h) on the CPU backend: parity of
// outputs and input gradients against the reference kernels, and finite-difference gradients.
// tests/cuda/test_cuda_ops.cpp runs the same table with the same assertions on cuda:0. The
// table's own soundness is checked here too: unique names, every declared op covered, the
// BackendOverride routing, and that a sabotaged kernel makes both checks fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "common/op_cases.h"

namespace dplab {
namespace {

using test::OpCase;

class CpuOps : public testing::TestWithParam<OpCase> {};

TEST_P(CpuOps, MatchesRefAndFiniteDifferences) {
  const OpCase& c = GetParam();
  if (const std::string why = test::op_case_unsupported(c, Device::cpu()); !why.empty())
    GTEST_SKIP() << why;
  {
    SCOPED_TRACE("parity with ref");
    test::expect_op_case_matches_ref(c, Device::cpu());
  }
  {
    SCOPED_TRACE("finite differences");
    test::expect_op_case_gradients(c, Device::cpu());
  }
}

INSTANTIATE_TEST_SUITE_P(OpCases, CpuOps, testing::ValuesIn(test::op_cases()),
                         [](const testing::TestParamInfo<OpCase>& i) { return i.param.name; });

TEST(OpCaseTable, NamesAreUniqueAndUsableAsTestNames) {
  const std::regex valid("[A-Za-z0-9_]+");
  std::set<std::string> seen;
  for (const OpCase& c : test::op_cases()) {
    EXPECT_TRUE(std::regex_match(c.name, valid)) << "'" << c.name << "'";
    EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case " << c.name;
    EXPECT_FALSE(c.ops.empty()) << c.name << " names no op";
  }
  EXPECT_GE(seen.size(), 100u);
}

TEST(OpCaseTable, CoversEveryOpDeclaredInCoreOps) {
  const std::vector<std::string> declared = test::declared_ops(DPLAB_TEST_SOURCE_DIR);
  // Spot names from each header, so a parser that finds nothing cannot pass.
  for (const char* must : {"conv2d", "add", "cast", "add_", "linear", "cross_entropy",
                           "batch_norm2d", "max_pool2d", "dropout", "sum_of_squares", "flatten"})
    EXPECT_NE(std::find(declared.begin(), declared.end(), must), declared.end()) << must;
  std::set<std::string> covered;
  for (const OpCase& c : test::op_cases()) covered.insert(c.ops.begin(), c.ops.end());
  for (const std::string& op : declared)
    EXPECT_TRUE(covered.count(op)) << "no case exercises " << op << " (core/ops)";
  for (const std::string& op : covered)
    EXPECT_NE(std::find(declared.begin(), declared.end(), op), declared.end())
        << "a case names '" << op << "', which core/ops does not declare";
}

// A backend whose element-wise unary kernel throws: proves which backend ran.
Backend spy_backend() {
  Backend b = ref_backend();
  b.name = "spy";
  b.ew.unary = [](UnaryOp, float, const Tensor&, Tensor&) {
    DPLAB_FAIL("the spy backend's unary kernel ran");
  };
  return b;
}

TEST(BackendOverride, RoutesCpuOpsOnThisThreadAndRestores) {
  const Backend spy = spy_backend();
  const Tensor x = test::random_tensor({4}, 1);
  EXPECT_EQ(&backend_for(Device::cpu()), &cpu_backend());
  {
    BackendOverride o(spy);
    EXPECT_EQ(backend_for(Device::cpu()).name, "spy");
    EXPECT_THROW(neg(x), Error);
    {
      BackendOverride inner(ref_backend());
      EXPECT_EQ(&backend_for(Device::cpu()), &ref_backend());
      EXPECT_NO_THROW(neg(x));
    }
    EXPECT_THROW(neg(x), Error);
    // Other threads keep the default.
    std::string other;
    std::thread([&] { other = backend_for(Device::cpu()).name; }).join();
    EXPECT_EQ(other, "cpu");
  }
  EXPECT_EQ(&backend_for(Device::cpu()), &cpu_backend());
  EXPECT_NO_THROW(neg(x));
}

// A sabotaged CPU backend: conv forward off by 0.1 in one output element, softmax backward 20% too
// large. The table's checks must catch both: a test that cannot fail is no test.
Backend sabotaged_backend() {
  Backend b = cpu_backend();
  b.name = "sabotaged";
  b.conv.conv2d_forward = [](const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                             const Conv2dParams& p) {
    cpu_backend().conv.conv2d_forward(x, w, bias, y, p);
    y.data<float>()[y.numel() / 2] += 0.1f;
  };
  b.loss.softmax_backward = [](const Tensor& y, const Tensor& dy, int dim, bool log, Tensor& dx) {
    cpu_backend().loss.softmax_backward(y, dy, dim, log, dx);
    mul_(dx, 1.2f);
  };
  return b;
}

const OpCase& find_case(const std::string& name) {
  for (const OpCase& c : test::op_cases())
    if (c.name == name) return c;
  throw std::runtime_error("no op case " + name);
}

// Runs `check` with the sabotaged backend and returns how many failures it reported.
template <typename F>
int failures_with_sabotage(F check) {
  const Backend bad = sabotaged_backend();
  testing::TestPartResultArray results;
  {
    testing::ScopedFakeTestPartResultReporter intercept(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    BackendOverride o(bad);
    check();
  }
  int failed = 0;
  for (int i = 0; i < results.size(); ++i) failed += results.GetTestPartResult(i).failed();
  return failed;
}

TEST(OpCaseTable, ParityFailsOnAWrongForwardKernel) {
  const OpCase& c = find_case("conv_3x3_pad1_bias");
  EXPECT_GT(failures_with_sabotage([&] { test::expect_op_case_matches_ref(c, Device::cpu()); }), 0);
  // Unsabotaged, the same check passes (so the failure above is the sabotage's).
  test::expect_op_case_matches_ref(c, Device::cpu());
}

TEST(OpCaseTable, ParityAndFiniteDifferencesFailOnAWrongBackwardKernel) {
  const OpCase& c = find_case("log_softmax_last");
  EXPECT_GT(failures_with_sabotage([&] { test::expect_op_case_matches_ref(c, Device::cpu()); }), 0);
  EXPECT_GT(failures_with_sabotage([&] { test::expect_op_case_gradients(c, Device::cpu()); }), 0);
  test::expect_op_case_gradients(c, Device::cpu());
}

}  // namespace
}  // namespace dplab
