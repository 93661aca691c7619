// wait_until_pipe_is_read (comm/pipe_drain.h), with real pipes and a reader thread: it returns
// only once the reader has taken every byte, gives up after its limit when nobody reads, and does
// not wait on a descriptor that is not a pipe.
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "dplab/comm/pipe_drain.h"

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

int unread(int fd) {
  int n = -1;
  EXPECT_EQ(ioctl(fd, FIONREAD, &n), 0);
  return n;
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fd), 0); }
  ~Pipe() {
    for (int f : fd) close(f);
  }
};

TEST(PipeDrain, ReturnsOnlyAfterTheReaderTookEveryByte) {
  Pipe p;
  const std::string msg(100, 'x');
  ASSERT_EQ(write(p.fd[1], msg.data(), msg.size()), 100);
  // The reader starts 200 ms late and reads in two parts, so a wait that returned early (or
  // after the first part) would see bytes left.
  std::thread reader([&] {
    std::this_thread::sleep_for(milliseconds(200));
    char buf[100];
    ASSERT_EQ(read(p.fd[0], buf, 60), 60);
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_EQ(read(p.fd[0], buf, 40), 40);
  });
  const auto t0 = Clock::now();
  EXPECT_TRUE(dplab::wait_until_pipe_is_read(p.fd[1], milliseconds(5000)));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(unread(p.fd[0]), 0);
  EXPECT_GE(waited, 0.2);  // the reader's own delay: a lower bound, whatever the load
  reader.join();
}

TEST(PipeDrain, GivesUpAfterItsLimitWhenNobodyReads) {
  Pipe p;
  ASSERT_EQ(write(p.fd[1], "abc", 3), 3);
  const auto t0 = Clock::now();
  EXPECT_FALSE(dplab::wait_until_pipe_is_read(p.fd[1], milliseconds(100)));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(waited, 0.1);
  EXPECT_EQ(unread(p.fd[0]), 3);  // nothing was consumed by the wait itself
}

TEST(PipeDrain, AnEmptyPipeOrAFileIsNotWaitedOn) {
  Pipe p;
  EXPECT_TRUE(dplab::wait_until_pipe_is_read(p.fd[1], milliseconds(0)));
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  std::fputs("unread", f);
  std::fflush(f);
  EXPECT_TRUE(dplab::wait_until_pipe_is_read(fileno(f), milliseconds(0)));
  std::fclose(f);
}

}  // namespace
