// core/host_wait.h, the bounded wait under every host wait for the device (issue #31 item 2),
// device-free: the probe is a function of the test. The limits are hand values; the slack of the
// upper bounds (seconds) covers a loaded 2-core machine, not the loop's own precision.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>

#include "dplab/core/error.h"
#include "dplab/core/host_wait.h"

namespace dplab {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(HostWait, ReturnsOnceTheProbeIsReady) {
  int polls = 0;
  poll_until([&] { return ++polls == 200; }, "ready at the 200th poll", 10);
  EXPECT_EQ(polls, 200);  // no poll after the ready one, none skipped
}

TEST(HostWait, ThrowsAfterTheLimitNamingWhatWaitedAndWhoDidNotCome) {
  std::atomic<int> idle{0};
  HostWaitHooks hooks;
  hooks.idle = [&](const std::string& what, double) {
    EXPECT_EQ(what, "never ready");
    ++idle;
  };
  hooks.on_timeout = [](const std::string& what) { return "rank 3 never joined " + what; };
  set_host_wait_timeout(0.2, hooks);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    poll_until([] { return false; }, "never ready");  // the process-wide limit
    ADD_FAILURE() << "a probe that is never ready returned";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("never ready: the device did not finish within 0.2 s (comm.timeout_s)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("rank 3 never joined never ready"), std::string::npos) << m;
  }
  const double waited = since(t0);
  set_host_wait_timeout(0);
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 3.0);
  EXPECT_GT(idle.load(), 0) << "the stall report is answered while waiting";
}

TEST(HostWait, AnExplicitLimitOverridesTheProcessWideOne) {
  set_host_wait_timeout(100);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(poll_until([] { return false; }, "short", 0.1), Error);
  EXPECT_LT(since(t0), 3.0);
  set_host_wait_timeout(0);
  EXPECT_EQ(host_wait_timeout(), 0.0);
}

TEST(HostWait, AnErrorFromTheProbePropagatesUnchanged) {
  int polls = 0;
  try {
    poll_until(
        [&]() -> bool {
          if (++polls == 100) throw std::runtime_error("device fault");
          return false;
        },
        "faulty", 10);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "device fault");
  }
  EXPECT_EQ(polls, 100);
}

TEST(HostWait, QuietPollSaysWhetherItFinished) {
  int polls = 0;
  EXPECT_TRUE(poll_quietly([&] { return ++polls == 100; }, 10));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(poll_quietly([] { return false; }, 0.1));
  EXPECT_LT(since(t0), 3.0);
  EXPECT_FALSE(poll_quietly([]() -> bool { throw std::runtime_error("x"); }, 10));
}

}  // namespace
}  // namespace dplab
