// The training thread's kernel counts recorded per epoch (train/report/thread_usage.h): each
// figure is provoked by an action whose count is known by construction.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dplab/train/report/thread_usage.h"

namespace dplab {
namespace {

// Each blocking sleep gives up the core: one voluntary switch at least.
TEST(ThreadUsage, SleepsAreVoluntarySwitchesOfTheCallingThread) {
  const ThreadUsage before = thread_usage_now();
  for (int i = 0; i < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const ThreadUsage d = thread_usage_now() - before;
  EXPECT_GE(d.voluntary_switches, 20);
  // Another thread's sleeps are not the caller's.
  const ThreadUsage mid = thread_usage_now();
  std::thread t([] {
    for (int i = 0; i < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  t.join();  // one block of the caller at most
  EXPECT_LE((thread_usage_now() - mid).voluntary_switches, 2);
}

// Two threads spinning on one core: the scheduler preempts each several times in 300 ms (its
// slices are a few milliseconds), so the caller counts involuntary switches.
TEST(ThreadUsage, SharingACoreGivesInvoluntarySwitches) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  auto spin = [](double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
  };
  std::atomic<bool> pinned{false};
  std::thread rival([&] {
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    pinned = true;
    spin(0.6);
  });
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  while (!pinned) std::this_thread::yield();
  const ThreadUsage before = thread_usage_now();
  spin(0.3);
  const ThreadUsage d = thread_usage_now() - before;
  rival.join();
  pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  EXPECT_GE(d.involuntary_switches, 1);
}

// A page of a file that is not in the page cache is read from disk on first touch: a major
// fault. The file is written, synced (its pages become clean) and dropped from the cache.
TEST(ThreadUsage, TouchingAnUncachedFilePageIsAMajorFault) {
  const std::filesystem::path file =
      std::filesystem::current_path() / ("thread_usage_" + std::to_string(getpid()) + ".bin");
  struct statfs fs {};
  ASSERT_EQ(statfs(std::filesystem::current_path().c_str(), &fs), 0);
  if (fs.f_type == 0x01021994 /* TMPFS_MAGIC */)
    GTEST_SKIP() << "the working directory is on tmpfs: its pages are never read from disk";
  const size_t bytes = size_t(16) << 20;
  {
    std::vector<char> data(bytes, 'x');
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(data.data(), 1, bytes, f), bytes);
    std::fflush(f);
    fsync(fileno(f));
    std::fclose(f);
  }
  const int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  const ThreadUsage before = thread_usage_now();
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += 4096) sum += static_cast<const unsigned char*>(p)[i];
  const ThreadUsage d = thread_usage_now() - before;
  munmap(p, bytes);
  close(fd);
  std::filesystem::remove(file);
  EXPECT_EQ(sum, uint64_t('x') * (bytes / 4096));
  EXPECT_GE(d.major_faults, 1);  // read-ahead may bring many pages in with one fault
}

}  // namespace
}  // namespace dplab
