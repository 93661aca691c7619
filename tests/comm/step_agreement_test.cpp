// StepAgreement (tools/train/step_agreement.h) across ranks: a bit posted by one rank at tick t
// reaches every rank at tick t + kLag (or at a flush), with each rank's report at its index.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "dplab/comm/mpi_env.h"
#include "dplab/tools/train/step_agreement.h"

namespace dplab {
namespace {

constexpr int64_t kLag = StepAgreement::kLag;

TEST(StepAgreementMpi, ABitPostedByOneRankIsActedOnByEveryRankAtTheSameTick) {
  const int rank = MpiEnv::get().world_rank(), n = MpiEnv::get().world_size();
  Options opt;
  StepAgreement a(opt, n);
  const int last = n - 1;
  // Tick 3: the last rank saw a non-finite value. Tick 5: rank 0 was signalled.
  const int64_t bad = 3, signalled = 5;
  std::vector<std::pair<int64_t, Agreement>> seen;  // (tick at which it came due, result)
  for (int64_t t = 0; t < 20; ++t) {
    const bool nf = rank == last && t == bad;
    const bool pre = rank == 0 && t == signalled;
    const std::string report = nf ? fmt::format("loss on {}", rank) : pre ? "SIGUSR1" : "";
    for (Agreement& r : a.tick(t, nf, pre, report)) seen.emplace_back(t, std::move(r));
  }
  EXPECT_TRUE(a.flush().empty());
  const int64_t lag = n > 1 ? kLag : 0;
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, bad + lag);
  EXPECT_EQ(seen[0].second.tick, bad);
  EXPECT_TRUE(seen[0].second.nonfinite);
  EXPECT_FALSE(seen[0].second.preempt);
  ASSERT_EQ(int(seen[0].second.reports.size()), n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(seen[0].second.reports[size_t(i)], i == last ? fmt::format("loss on {}", last) : "");
  EXPECT_EQ(seen[1].first, signalled + lag);
  EXPECT_EQ(seen[1].second.tick, signalled);
  EXPECT_TRUE(seen[1].second.preempt);
  EXPECT_EQ(seen[1].second.reporting_ranks(), (std::vector<int>{0}));

  // A flush completes what is still in flight, in tick order.
  EXPECT_TRUE(a.tick(20, false, false, "").empty());
  EXPECT_TRUE(a.tick(21, rank == 0, false, "late").empty() || n == 1);
  std::vector<Agreement> rest = a.flush();
  if (n > 1) {
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].tick, 21);
    EXPECT_EQ(rest[0].reporting_ranks(), (std::vector<int>{0}));
  }
  EXPECT_EQ(a.pending(), 0);

  // The blocking vote: one rank's bit, every rank's answer; long texts are capped.
  Agreement v = a.agree(rank == last, false, [&] { return std::string(2000, char('a' + rank)); });
  EXPECT_TRUE(v.nonfinite);
  EXPECT_EQ(v.reports[size_t(last)],
            std::string(size_t(StepAgreement::kReportBytes - 1), char('a' + last)));
  a.barrier();
}

}  // namespace
}  // namespace dplab
