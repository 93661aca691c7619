// The death watch's order, without a launcher: a "proxy" process (a fork of the test) starts
// rank processes with hydra's environment (PMI_RANK, PMI_SIZE, MPI_LOCALNRANKS), kills them in
// an order the test chooses, and collects what their watchers print. The expected names follow
// from the order of the kills alone (death_watch.h): the first rank to die is named when every
// rank had registered before it died; a rank killed later is never named.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dplab/comm/death_watch.h"

namespace {

struct Rank {
  pid_t pid = -1;
  int cmd = -1;     // write end: 'f' asks for first_silent_death(), 'q' makes the rank exit, 'h'
                    // makes it fork a child holding its files (answer: the child's pid)
  int answer = -1;  // read end: the rank's answer
};

// Starts rank `r` of `n`; returns once it has registered (DeathWatch::start() returned).
Rank start_rank(int r, int n, int err_fd) {
  int ready[2], cmd[2], answer[2];
  if (pipe(ready) || pipe(cmd) || pipe(answer)) std::abort();
  Rank k;
  k.pid = fork();
  if (k.pid == 0) {
    dup2(err_fd, STDERR_FILENO);
    setenv("PMI_RANK", std::to_string(r).c_str(), 1);
    setenv("PMI_SIZE", std::to_string(n).c_str(), 1);
    setenv("MPI_LOCALNRANKS", std::to_string(n).c_str(), 1);
    dplab::DeathWatch::start();
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    while (read(cmd[0], &c, 1) == 1) {
      if (c == 'q') {  // a normal exit, as ~MpiEnv ends one
        dplab::DeathWatch::start().stop();
        _exit(0);
      }
      if (c == 'a') std::abort();
      if (c == 'h') {  // a child that keeps this rank's files open after it dies
        const pid_t holder = fork();
        if (holder == 0) {
          pause();
          _exit(0);
        }
        const int h = static_cast<int>(holder);
        if (write(answer[1], &h, sizeof h) != sizeof h) _exit(2);
        continue;
      }
      const int first = dplab::DeathWatch::start().first_silent_death();
      if (write(answer[1], &first, sizeof first) != sizeof first) _exit(2);
    }
    pause();  // until killed
    _exit(0);
  }
  close(ready[1]);
  close(cmd[0]);
  close(answer[1]);
  char c = 0;
  if (read(ready[0], &c, 1) != 1) std::abort();
  close(ready[0]);
  k.cmd = cmd[1];
  k.answer = answer[0];
  return k;
}

void kill_and_reap(const Rank& k) {
  kill(k.pid, SIGKILL);
  waitpid(k.pid, nullptr, 0);
}

int ask_first_death(const Rank& k) {
  char c = 'f';
  int first = -2;
  if (write(k.cmd, &c, 1) != 1 || read(k.answer, &first, sizeof first) != sizeof first) return -3;
  return first;
}

// Runs `scenario` in a fresh proxy process (so each scenario has its own directory) and returns
// everything the ranks and their watchers printed to stderr, then `first` as reported.
template <typename F>
std::string in_proxy(F scenario) {
  int out[2];
  if (pipe(out)) std::abort();
  const pid_t proxy = fork();
  if (proxy == 0) {
    close(out[0]);
    scenario(out[1]);  // ranks and watchers write into out[1]
    _exit(0);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  // EOF once the proxy and every watcher (they outlive their ranks briefly) have closed it.
  while ((n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(proxy, nullptr, 0);
  return text;
}

bool names(const std::string& text, int r, int n) {
  return text.find("dplab: rank " + std::to_string(r) + " of " + std::to_string(n) + " (pid") !=
         std::string::npos;
}

void say(int fd, const std::string& s) {
  if (write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) std::abort();
}

TEST(DeathOrder, FirstOfRegisteredRanksIsNamedAndOnlyIt) {
  const std::string text = in_proxy([](int err) {
    std::vector<Rank> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(start_rank(r, 3, err));
    kill_and_reap(ranks[1]);
    // A survivor's own failure message can then name rank 1 (MpiEnv::abort uses this).
    say(err, "first=" + std::to_string(ask_first_death(ranks[0])) + "\n");
    // As a launcher does: the others die after, rank 2 before rank 0.
    kill_and_reap(ranks[2]);
    kill_and_reap(ranks[0]);
  });
  EXPECT_NE(text.find("first=1\n"), std::string::npos) << text;
  EXPECT_TRUE(names(text, 1, 3)) << text;
  EXPECT_FALSE(names(text, 0, 3)) << text;
  EXPECT_FALSE(names(text, 2, 3)) << text;
}

// The root cause of the wrong names measured before: a rank that registers after another has
// died never sees that death in its queue, and when the launcher then kills it first, the old
// watch named it. Here rank 2 starts after rank 1's death and is killed before rank 0.
TEST(DeathOrder, RankRegisteringAfterADeathIsNeverNamed) {
  const std::string text = in_proxy([](int err) {
    Rank r0 = start_rank(0, 3, err);
    Rank r1 = start_rank(1, 3, err);
    kill_and_reap(r1);
    Rank r2 = start_rank(2, 3, err);
    say(err, "first=" + std::to_string(ask_first_death(r2)) + "\n");
    kill_and_reap(r2);
    kill_and_reap(r0);
  });
  EXPECT_FALSE(names(text, 2, 3)) << text;
  EXPECT_FALSE(names(text, 0, 3)) << text;
  // Rank 1 died before rank 2 had registered: nobody can know that no rank died even earlier,
  // so nobody is named and a survivor's report does not name anyone either.
  EXPECT_FALSE(names(text, 1, 3)) << text;
  EXPECT_NE(text.find("first=-1\n"), std::string::npos) << text;
}

// A rank whose process has died while its record is still open (its last thread, here a child
// holding its files, has not finished) died first, although its close is queued later. UCX's
// CMA transport creates that situation: a survivor reads the dying rank's memory, fails and
// aborts (SIGABRT) before the dying rank's close. The aborting survivor must not be named, and
// the rank that died first is, once its close comes.
TEST(DeathOrder, AbortAfterAPeersDeathBeganNamesThePeer) {
  const std::string text = in_proxy([](int err) {
    Rank r0 = start_rank(0, 2, err);
    Rank r1 = start_rank(1, 2, err);
    char c = 'h';
    int holder = -1;
    if (write(r0.cmd, &c, 1) != 1 || read(r0.answer, &holder, sizeof holder) != sizeof holder)
      std::abort();
    kill_and_reap(r0);  // dead and reaped, its record still open in the holder
    c = 'a';            // rank 1 aborts, as UCX makes a reader of a dead peer's memory do
    if (write(r1.cmd, &c, 1) != 1) std::abort();
    waitpid(r1.pid, nullptr, 0);
    kill(holder, SIGKILL);  // rank 0's death completes: its close comes after rank 1's
  });
  EXPECT_FALSE(names(text, 1, 2)) << text;
  EXPECT_TRUE(names(text, 0, 2)) << text;
}

// Normal exits are not deaths: a rank that said goodbye and exited before another was killed
// does not hide the killed one, and is not named itself.
TEST(DeathOrder, NormalExitThenKillNamesTheKilledRank) {
  const std::string text = in_proxy([](int err) {
    Rank r0 = start_rank(0, 2, err);
    Rank r1 = start_rank(1, 2, err);
    say(err, "first=" + std::to_string(ask_first_death(r1)) + "\n");  // nobody died yet
    char c = 'q';
    if (write(r0.cmd, &c, 1) != 1) std::abort();
    waitpid(r0.pid, nullptr, 0);
    kill_and_reap(r1);
  });
  EXPECT_NE(text.find("first=-1\n"), std::string::npos) << text;
  EXPECT_TRUE(names(text, 1, 2)) << text;
  EXPECT_FALSE(names(text, 0, 2)) << text;
}

}  // namespace
