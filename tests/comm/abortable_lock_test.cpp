// comm/abortable_lock.h, the NCCL family's lock, device-free (issue #31 item 2): a holder that
// polls a call which never finishes (as a one-sided collective would) is aborted from another
// thread without that thread needing the lock, and a thread that cannot get the lock in time
// ends the holder's wait too. The "NCCL call" is a loop of the test; the abort action records
// its reason.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dplab/comm/abortable_lock.h"
#include "dplab/core/error.h"
#include "dplab/core/host_wait.h"

namespace dplab {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Family {
  std::mutex mu;
  std::vector<std::string> aborts;  // the reason of each abort action run
  AbortableLock lock{[this](const std::string& why) {
    std::lock_guard<std::mutex> g(mu);
    aborts.push_back(why);
  }};
};

// What NcclState::await_locked does: under the lock, poll a call (here: one that never finishes)
// with a limit, checking for a requested abort at each poll.
std::string stuck_call(Family& f, double limit_s) {
  try {
    AbortableLock::Guard g(f.lock, "allreduce nobody joined", 60);
    poll_until(
        [&] {
          f.lock.abort_if_requested("allreduce nobody joined");
          return false;
        },
        "allreduce nobody joined", limit_s);
  } catch (const Error& e) {
    return e.what();
  }
  return "returned";
}

TEST(AbortableLock, AbortFromAnotherThreadEndsTheHoldersWaitAtOnce) {
  Family f;
  std::string holder_error;
  std::atomic<bool> started{false};
  std::thread holder([&] {
    started = true;
    holder_error = stuck_call(f, 60);  // far beyond the test: only the abort can end it
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  f.lock.request_abort("the watchdog: a request timed out");
  const double abort_s = since(t0);
  holder.join();
  EXPECT_LT(abort_s, 2.0) << "the abort waited for the stuck call";
  EXPECT_NE(holder_error.find("aborted from another thread (the watchdog: a request timed out)"),
            std::string::npos)
      << holder_error;
  std::lock_guard<std::mutex> g(f.mu);
  ASSERT_FALSE(f.aborts.empty());
  EXPECT_EQ(f.aborts.front(), "the watchdog: a request timed out");
}

TEST(AbortableLock, AThreadThatCannotGetTheLockInTimeAbortsAndNamesTheHolder) {
  Family f;
  std::string holder_error;
  std::atomic<bool> holding{false};
  std::thread holder([&] {
    try {
      AbortableLock::Guard g(f.lock, "allreduce nobody joined", 60);
      holding = true;
      poll_until(
          [&] {
            f.lock.abort_if_requested("allreduce nobody joined");
            return false;
          },
          "allreduce nobody joined", 60);
    } catch (const Error& e) {
      holder_error = e.what();
    }
  });
  while (!holding) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  std::string waiter_error;
  try {
    AbortableLock::Guard g(f.lock, "barrier", 0.3);
    ADD_FAILURE() << "got the lock while the holder was stuck";
  } catch (const Error& e) {
    waiter_error = e.what();
  }
  const double waited = since(t0);
  holder.join();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 3.0);
  EXPECT_NE(waiter_error.find("barrier: waiting for the NCCL communicators' lock (held by: "
                              "allreduce nobody joined)"),
            std::string::npos)
      << waiter_error;
  EXPECT_NE(holder_error.find("aborted from another thread"), std::string::npos) << holder_error;
  // The lock is free again, and usable.
  AbortableLock::Guard g(f.lock, "after", 1);
}

TEST(AbortableLock, TheHoldersOwnLimitEndsItsWaitWithoutAnyoneElse) {
  Family f;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = stuck_call(f, 0.2);
  EXPECT_NE(e.find("did not finish within 0.2 s"), std::string::npos) << e;
  EXPECT_LT(since(t0), 3.0);
  EXPECT_FALSE(f.lock.abort_requested());
}

}  // namespace
}  // namespace dplab
