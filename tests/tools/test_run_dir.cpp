// One run per output directory (issue #38, train/state/run_lock.h): a second `dplab train` on a
// directory in use fails at once naming the holder, also under mpiexec (every rank stops, none
// waits for rank 0); --resume of a running run is refused; the lock file a killed run leaves
// is taken over, saying whose it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>

#include "data/temp_dir.h"
#include "run_cli.h"
#include "spawn_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// A small job; the long one runs until the test kills it (256 images, many epochs).
const std::string kJob =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --threads 1 --set "
    "data.train_limit=128 --set data.test_limit=50 --set progress=off";
const std::string kLong = kJob + " --epochs 100000";

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::string host() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// A `dplab train` that runs until killed; killed (SIGKILL) when the test ends, however it ends.
struct RunningJob {
  test::Spawned s;
  RunningJob(const std::string& args, const fs::path& scratch)
      : s(test::spawn(test::dplab_exe() + " " + args, scratch)) {}
  ~RunningJob() { kill_now(); }
  void kill_now() {
    if (s.pid <= 0) return;
    kill(s.pid, SIGKILL);
    test::wait_exit(s.pid, 60);
    s.pid = -1;
  }
};

// Waits until `dir`'s lock file holds its holder's record.
bool locked(const fs::path& dir) {
  return test::wait_until(
      [&] {
        std::error_code ec;
        return fs::file_size(dir / ".lock", ec) > 0 && !ec;
      },
      120);
}

TEST(RunDir, ASecondRunOnTheDirectoryFailsAtOnceAndResumeIsRefused) {
  ScopedTempDir dir("run-dir-busy");
  const fs::path out = dir.path / "run";
  // A checkpoint every 20 epochs, none removed: the one the test resumes from stays.
  RunningJob first(
      kLong + " --set checkpoint.every_epochs=20 --set checkpoint.keep=0 --out " + out.string(),
      dir.path / "first");
  ASSERT_TRUE(locked(out)) << slurp(first.s.err);
  const std::string holder = "pid " + std::to_string(first.s.pid) + " on host " + host();
  EXPECT_TRUE(has(slurp(out / ".lock"), std::to_string(first.s.pid))) << slurp(out / ".lock");

  // Under mpiexec: rank 0 cannot lock; every rank exits 1 (no rank left waiting for rank 0),
  // the message printed once, before any data is read.
  const auto t0 = std::chrono::steady_clock::now();
  auto r = test::run_dplab_mpi(2, kJob + " --algo allreduce --epochs 1 --out " + out.string(),
                               dir.path / "second");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const std::string expected =
      "--out " + out.string() + ": another run is using this directory: " + holder;
  EXPECT_TRUE(has(r.err, expected)) << r.err;
  EXPECT_EQ(r.err.find(expected), r.err.rfind(expected)) << "said more than once:\n" << r.err;
  EXPECT_TRUE(has(r.err, (out / ".lock").string())) << r.err;
  EXPECT_FALSE(has(r.out, "parameters), algorithm")) << "it went on:\n" << r.out;  // no header
  EXPECT_LT(seconds, 60) << "not at once";

  // Resuming the running run, into its own directory or another: refused.
  r = run_dplab(kJob + " --epochs 2 --resume " + out.string() + " --out " + out.string(),
                dir.path / "resume-same");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(
      has(r.err, "--out " + out.string() + ": another run is using this directory: " + holder))
      << r.err;
  r = run_dplab(kJob + " --epochs 2 --resume " + out.string() + " --out " + dir.file("other"),
                dir.path / "resume-other");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(
      has(r.err, "--resume " + out.string() + ": another run is using this directory: " + holder))
      << r.err;
  // ... also when naming one of its checkpoints.
  ASSERT_TRUE(test::wait_until([&] { return fs::is_directory(out / "checkpoints"); }, 120));
  fs::path ckpt;
  ASSERT_TRUE(test::wait_until(
      [&] {
        for (const auto& e : fs::directory_iterator(out / "checkpoints"))
          if (e.path().filename().string().starts_with("step_")) ckpt = e.path();
        return !ckpt.empty();
      },
      120));
  r = run_dplab(kJob + " --epochs 2 --resume " + ckpt.string() + " --out " + dir.file("other2"),
                dir.path / "resume-ckpt");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "--resume " + out.string() + ": another run is using")) << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "other2" / "run.json"));

  // The first run was never disturbed.
  EXPECT_EQ(waitpid(first.s.pid, nullptr, WNOHANG), 0) << slurp(first.s.err);
}

TEST(RunDir, TheLockOfAKilledRunIsTakenOver) {
  ScopedTempDir dir("run-dir-stale");
  const fs::path out = dir.path / "run";
  RunningJob killed(kLong + " --out " + out.string(), dir.path / "killed");
  ASSERT_TRUE(locked(out)) << slurp(killed.s.err);
  const pid_t pid = killed.s.pid;
  killed.kill_now();  // SIGKILL: no destructor ran, its record stays in the lock file
  ASSERT_TRUE(has(slurp(out / ".lock"), std::to_string(pid)));

  auto r = run_dplab(kJob + " --epochs 1 --out " + out.string(), dir.path / "next");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "its lock file " + (out / ".lock").string() + " named pid " +
                             std::to_string(pid) + " on host " + host()))
      << r.err;
  EXPECT_TRUE(has(r.err, "taking it over")) << r.err;
  // Ended in order: the record is emptied, and the next run has nothing to report.
  EXPECT_EQ(fs::file_size(out / ".lock"), 0u);
  r = run_dplab(kJob + " --epochs 1 --out " + out.string(), dir.path / "after");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(has(r.err, "lock")) << r.err;
}

}  // namespace
}  // namespace dplab
