// StepAgreement (tools/train/step_agreement.h) across ranks: a bit set on one rank reaches every
// rank in the same call, with each rank's report at its index.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "dplab/comm/mpi_env.h"
#include "dplab/tools/train/step_agreement.h"

namespace dplab {
namespace {

TEST(StepAgreementMpi, OneRanksBitReachesEveryRank) {
  const int rank = MpiEnv::get().world_rank(), n = MpiEnv::get().world_size();
  Options opt;
  StepAgreement a(opt, n);
  int built = 0;
  auto report = [&] {
    ++built;
    return fmt::format("report of {}", rank);
  };
  // Nothing set anywhere: nothing to report, no report built.
  Agreement r = a.agree(false, false, report);
  EXPECT_FALSE(r.any());
  EXPECT_TRUE(r.reports.empty());
  EXPECT_EQ(built, 0);

  // The last rank saw a non-finite value: every rank learns it, and the last rank's words.
  const int last = n - 1;
  r = a.agree(rank == last, false, report);
  EXPECT_TRUE(r.nonfinite);
  EXPECT_FALSE(r.preempt);
  ASSERT_EQ(int(r.reports.size()), n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(r.reports[size_t(i)], i == last ? fmt::format("report of {}", last) : "");
  EXPECT_EQ(r.reporting_ranks(), (std::vector<int>{last}));
  EXPECT_EQ(built, rank == last ? 1 : 0);  // only the rank with something to say builds it

  // Rank 0 was signalled while the last one saw a non-finite value: both bits, both reports.
  r = a.agree(rank == last, rank == 0, report);
  EXPECT_TRUE(r.nonfinite);
  EXPECT_TRUE(r.preempt);
  std::vector<int> expect = {0};
  if (last != 0) expect.push_back(last);
  EXPECT_EQ(r.reporting_ranks(), expect);

  // A long report is cut to the fixed size, not overflowing into the next rank's slot.
  r = a.agree(true, false, [&] { return std::string(2000, char('a' + rank % 26)); });
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(r.reports[size_t(i)],
              std::string(size_t(StepAgreement::kReportBytes - 1), char('a' + i % 26)));
  a.barrier();
}

}  // namespace
}  // namespace dplab
