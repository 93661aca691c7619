// core/cpu_isa.h: the builds of dplab's CPU loops (issue #31, item 1). Every build this CPU runs
// (the portable one and each variant) passes the whole op-case table against the reference
// kernels, with the same tolerances as the cpu backend (tests/core/test_op_cases.cpp), so the
// AVX-512 build the dispatcher picks on one machine and the portable build it picks on another
// compute the same ops. The choice itself is checked on hand-made inputs.
#include <gtest/gtest.h>

#include "common/op_cases.h"
#include "dplab/core/backend.h"
#include "dplab/core/cpu_isa.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

TEST(CpuIsa, ChoosesTheBestBuildTheCpuRunsUnlessToldBaseline) {
  EXPECT_EQ(choose_cpu_isa({true}, ""), 0u);
  EXPECT_EQ(choose_cpu_isa({true, true, true}, ""), 2u);
  EXPECT_EQ(choose_cpu_isa({true, true, false}, ""), 1u);  // AVX2 without AVX-512
  EXPECT_EQ(choose_cpu_isa({true, true, true}, "baseline"), 0u);
  EXPECT_THROW(choose_cpu_isa({true, true}, "avx512"), UsageError);
}

TEST(CpuIsa, TheActiveBuildIsTheCpuBackendAndIsNamed) {
  const auto& builds = cpu_isa_builds();
  ASSERT_FALSE(builds.empty());
  EXPECT_EQ(builds.front().backend, &portable_cpu_backend());
  EXPECT_EQ(cpu_isa_active().backend, &cpu_backend());
  EXPECT_NE(cpu_isa_summary().find(cpu_isa_active().isa), std::string::npos) << cpu_isa_summary();
  // Without DPLAB_CPU_DISPATCH the last runnable build is taken.
  if (std::getenv("DPLAB_CPU_DISPATCH") == nullptr) {
    EXPECT_EQ(&cpu_isa_active(), &builds.back());
  }
}

TEST(CpuIsa, EveryBuildThisCpuRunsMatchesTheReferenceOnEveryOpCase) {
  const auto& builds = cpu_isa_builds();
  if (builds.size() < 2)
    GTEST_SKIP() << "this CPU runs only the portable build (" << cpu_isa_summary()
                 << "): the cpu backend's op cases (CpuOps) cover it";
  for (size_t b = 0; b + 1 < builds.size(); ++b) {  // the last is cpu_backend(): CpuOps
    SCOPED_TRACE("build " + builds[b].isa);
    BackendOverride use(*builds[b].backend);
    for (const test::OpCase& c : test::op_cases()) {
      if (!test::op_case_unsupported(c, Device::cpu()).empty()) continue;  // CpuOps says why
      SCOPED_TRACE(c.name);
      test::expect_op_case_matches_ref(c, Device::cpu());
    }
  }
}

}  // namespace
}  // namespace dplab
