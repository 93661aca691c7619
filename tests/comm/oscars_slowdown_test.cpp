// comm/slowdown.h: parsing of --slowdown, and a slowed iteration lasting ~FACTOR times as long
// while sleeping (not burning CPU) for the extra time.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include "dplab/comm/slowdown.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ~`seconds` of pure computation.
double burn(double seconds) {
  const double t0 = wall();
  volatile double x = 0;
  while (wall() - t0 < seconds)
    for (int i = 0; i < 1000; ++i) x = x + std::sqrt(double(i));
  return x;
}

TEST(Slowdown, Parse) {
  auto m = Slowdown::parse("2=1.5,3=2");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m[2], 1.5);
  EXPECT_DOUBLE_EQ(m[3], 2.0);
  EXPECT_TRUE(Slowdown::parse("").empty());
  EXPECT_THROW(Slowdown::parse("2:1.5"), Error);
  EXPECT_THROW(Slowdown::parse("2=0.5"), Error);
  EXPECT_THROW(Slowdown::parse("x=2"), Error);
  EXPECT_THROW(Slowdown::parse("1=2,1=3"), Error);
  EXPECT_THROW(Slowdown::parse("1=2abc"), Error);
  Options o;
  o.set("slowdown", "1=3");
  EXPECT_DOUBLE_EQ(Slowdown::from_options(o, 1, 2).factor(), 3.0);
  EXPECT_DOUBLE_EQ(Slowdown::from_options(o, 0, 2).factor(), 1.0);
  EXPECT_THROW(Slowdown::from_options(o, 0, 1), Error);  // rank 1 of a 1-rank run
}

TEST(Slowdown, IterationLastsFactorTimesLongerBySleeping) {
  constexpr double kCompute = 0.03;
  Slowdown plain(1.0), slow(2.0);
  // Unslowed iteration.
  double t0 = wall();
  plain.start();
  burn(kCompute);
  plain.stop();
  EXPECT_EQ(plain.pause(), 0.0);
  const double natural = wall() - t0;
  // Slowed iteration, compute split in two brackets as in the training loop.
  t0 = wall();
  const double cpu0 = cpu_seconds();
  slow.start();
  burn(kCompute / 2);
  slow.stop();
  slow.start();
  burn(kCompute / 2);
  const double slept = slow.pause();
  const double slowed = wall() - t0;
  const double cpu = cpu_seconds() - cpu0;
  EXPECT_GE(slowed, 1.5 * natural) << "natural " << natural << " s, slowed " << slowed << " s";
  EXPECT_NEAR(slept, slow.total_compute_s(), 1e-9);
  EXPECT_GE(slept, 0.9 * kCompute);
  // The extra time was slept: CPU time stays near the compute part (loose: shared machine).
  EXPECT_LT(cpu, 0.5 * slowed + 0.005) << "cpu " << cpu << " s of " << slowed << " s";
}

}  // namespace
}  // namespace dplab
