// HelperWaits (comm/communicator.h): a helper thread's spin-policy waits sleep between tests
// while the compute thread computes, and spin once it waits. The bound is arithmetic, not a
// timing: nanosleep never returns early, so a wait of T seconds whose sleeps are at least
// WaitOptions::sleep_s makes at most T / sleep_s + 1 tests; a spinning one makes
// as many as the thread can in T (millions on any machine, thousands on a loaded one).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "dplab/comm/communicator.h"

namespace dplab {
namespace {

constexpr double kWaitS = 0.03;

// Tests made by a spin-policy polite_wait that lasts kWaitS.
int64_t tests_in_a_wait() {
  WaitOptions w;
  w.policy = WaitPolicy::spin;
  w.timeout_s = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t tests = 0;
  polite_wait(
      [&] {
        ++tests;
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
               kWaitS;
      },
      w, [] { return std::string("test wait"); });
  return tests;
}

int64_t sleeping_bound() {
  const WaitOptions w;
  return static_cast<int64_t>(kWaitS / w.sleep_s) + 1;
}

TEST(HelperWaits, SleepWhileTheComputeThreadComputes) {
  std::atomic<bool> compute_waiting{false};
  const HelperWaits scope(&compute_waiting);
  EXPECT_LE(tests_in_a_wait(), sleeping_bound());
}

TEST(HelperWaits, SpinWhileTheComputeThreadWaitsAndOutsideAScope) {
  {
    std::atomic<bool> compute_waiting{true};
    const HelperWaits scope(&compute_waiting);
    EXPECT_GT(tests_in_a_wait(), sleeping_bound());
  }
  EXPECT_GT(tests_in_a_wait(), sleeping_bound());  // the scope ended: a plain spin again
}

}  // namespace
}  // namespace dplab
