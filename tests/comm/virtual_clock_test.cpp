// The virtual clock (comm/cluster/virtual_clock.h): measured compute is the owner thread's CPU
// time x compute_scale, checked against getrusage(RUSAGE_THREAD), an independent account of the
// same thread's CPU time; sleeping (what a descheduled rank looks like) does not advance it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "dplab/comm/cluster/virtual_clock.h"
#include "dplab/core/error.h"

namespace dplab::cluster {
namespace {

double rusage_thread_cpu() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// About `seconds` of this thread's CPU time (by rusage), whatever the host's load.
double burn(double seconds) {
  const double start = rusage_thread_cpu();
  volatile double x = 1;
  while (rusage_thread_cpu() - start < seconds)
    for (int i = 0; i < 100000; ++i) x = std::sqrt(x + i);
  return rusage_thread_cpu() - start;
}

TEST(VirtualClock, MeasuredComputeIsThreadCpuTimeTimesTheScale) {
  VirtualClock clock(VirtualClock::Compute::measured, 2.0);
  const double t0 = clock.now();
  const double used = burn(0.2);
  const double advanced = clock.now() - t0;
  // rusage counts in microseconds and the two reads are not simultaneous: 5% + 4 ms.
  EXPECT_NEAR(advanced, 2.0 * used, 0.05 * 2.0 * used + 4e-3) << "cpu " << used;
}

// A slow event's factor (comm/cluster/events.h) multiplies the compute after it is set, on top
// of the scale; what ran before keeps the old factor.
TEST(VirtualClock, AComputeFactorMultipliesWhatRunsAfterIt) {
  VirtualClock clock(VirtualClock::Compute::measured, 2.0);
  const double t0 = clock.now();
  const double before = burn(0.1);
  clock.set_compute_factor(3.0);
  const double t1 = clock.now();
  EXPECT_NEAR(t1 - t0, 2.0 * before, 0.05 * 2.0 * before + 4e-3);
  const double after = burn(0.1);
  EXPECT_NEAR(clock.now() - t1, 6.0 * after, 0.05 * 6.0 * after + 4e-3);
  EXPECT_THROW(clock.set_compute_factor(0.0), Error);
}

TEST(VirtualClock, SleepingDoesNotAdvanceIt) {
  VirtualClock clock(VirtualClock::Compute::measured, 1.0);
  const double t0 = clock.now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(clock.now() - t0, 5e-3);  // 200 ms of wall time, almost no CPU time
}

// The training driver stops counting between steps (train/virtual/virtual_run.h): CPU time spent
// then is discarded, what runs after counting resumes is compute again, and waits still move
// the clock.
TEST(VirtualClock, CpuTimeWhileNotCountingIsDiscarded) {
  VirtualClock clock(VirtualClock::Compute::measured, 1.0);
  const double t0 = clock.now();
  clock.count_compute(false);
  EXPECT_FALSE(clock.counting_compute());
  burn(0.1);
  EXPECT_LT(clock.now() - t0, 5e-3);  // 100 ms of CPU time, not counted
  clock.wait_until(t0 + 1.0);
  EXPECT_GE(clock.now(), t0 + 1.0);
  clock.count_compute(true);
  const double t1 = clock.now();
  const double used = burn(0.1);
  EXPECT_NEAR(clock.now() - t1, used, 0.05 * used + 4e-3);
}

TEST(VirtualClock, OnlyTheOwnerThreadsCpuCounts) {
  VirtualClock clock(VirtualClock::Compute::measured, 1.0);
  const double t0 = clock.now();
  std::thread other([] { burn(0.2); });  // another thread of the process computes
  other.join();
  EXPECT_LT(clock.now() - t0, 5e-3);
}

TEST(VirtualClock, WaitsMoveItOnlyForwardAndDiscardTheirCpu) {
  VirtualClock clock(VirtualClock::Compute::manual, 1.0);
  clock.add_compute(3e-3);
  clock.wait_until(1e-3);  // ended before now: overlapped, no move
  EXPECT_DOUBLE_EQ(clock.now(), 3e-3);
  clock.wait_until(5e-3);
  EXPECT_DOUBLE_EQ(clock.now(), 5e-3);
  // Measured mode: CPU burnt while "waiting" (spinning) is not compute.
  VirtualClock m(VirtualClock::Compute::measured, 1.0);
  m.now();
  burn(0.05);
  m.wait_until(0);
  EXPECT_LT(m.now(), 5e-3);
  burn(0.05);
  m.discard_cpu();
  EXPECT_LT(m.now(), 5e-3);
}

TEST(VirtualClock, ManualModeIgnoresCpuTime) {
  VirtualClock clock(VirtualClock::Compute::manual, 1.0);
  burn(0.05);
  EXPECT_DOUBLE_EQ(clock.now(), 0.0);
  clock.add_compute(0.25);
  EXPECT_DOUBLE_EQ(clock.now(), 0.25);
}

}  // namespace
}  // namespace dplab::cluster
