// A failing rank must make the whole job exit non-zero within the time bound, with a message
// naming the lost rank: never a hang. Runs failure_child under mpiexec with 4 ranks.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace {

struct Outcome {
  int status = 0;
  std::string output;
  double seconds = 0;
};

Outcome run(const std::string& mode, int victim) {
  const std::string cmd = std::string(DPLAB_MPIEXEC) + " -n 4 " + DPLAB_FAILURE_CHILD + " " + mode +
                          " " + std::to_string(victim) + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  if (!p) return o;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) o.output += buf;
  o.status = pclose(p);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

TEST(Failure, ThrowingRankAbortsAllWithItsName) {
  Outcome o = run("throw", 2);
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0) << o.output;
  EXPECT_NE(o.output.find("rank 2 of 4 failed"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("injected failure"), std::string::npos) << o.output;
  // The rank named itself; the ranks the launcher then kills are not named by their watchers.
  EXPECT_EQ(o.output.find("died without reporting"), std::string::npos) << o.output;
  EXPECT_LT(o.seconds, 60);
}

TEST(Failure, KilledRankIsNamedByItsWatcher) {
  Outcome o = run("kill", 1);
  EXPECT_FALSE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << o.output;
  // A SIGKILLed rank cannot report itself: its DeathWatch process (comm/death_watch.h) does.
  ASSERT_NE(o.output.find("victim rank 1 pid "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("dplab: rank 1 of 4 (pid "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("died without reporting an error"), std::string::npos) << o.output;
  // Only the victim is named, not the ranks the launcher kills afterwards.
  for (int r : {0, 2, 3})
    EXPECT_EQ(o.output.find("rank " + std::to_string(r) + " of 4 (pid"), std::string::npos)
        << o.output;
  EXPECT_LT(o.seconds, 60);
}

TEST(Failure, SilentRankMakesOthersTimeOutNamingTheCollective) {
  Outcome o = run("hang", 3);
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0) << o.output;
  EXPECT_NE(o.output.find("did not complete within 5 s"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("allreduce(average)"), std::string::npos) << o.output;
  // The silent rank is killed by the launcher after the others reported: its watcher is quiet.
  EXPECT_EQ(o.output.find("died without reporting"), std::string::npos) << o.output;
  EXPECT_LT(o.seconds, 60);
}

}  // namespace
