#include "dplab/train/state/run_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "dplab/core/error.h"
#include "dplab/train/loop/run_stopped.h"
#include "dplab/train/report/run_record.h"

namespace dplab {
namespace fs = std::filesystem;

namespace {

std::string this_host() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// The lock file's content (a record is a few dozen bytes; more is not read).
std::string read_record(int fd) {
  char buf[4096];
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// The run directory --resume PATH reads from: PATH itself (a run directory: with checkpoints/,
// or a lock file of a run that has not written one yet), RUN for
// RUN/checkpoints/step_<N>; empty for a checkpoint directory that is in no run directory.
fs::path resume_run_dir(const fs::path& p) {
  std::error_code ec;
  if (fs::is_directory(p / "checkpoints", ec) || fs::exists(p / RunDirLock::kFileName, ec))
    return p;
  const fs::path parent = p.lexically_normal().parent_path();
  if (!parent.empty() && parent.filename() == "checkpoints" && fs::is_directory(p, ec))
    return parent.parent_path().empty() ? fs::path(".") : parent.parent_path();
  return {};
}

}  // namespace

RunLocks lock_run_dirs(const std::string& out_dir, const std::string& resume,
                       const RankGroup& ranks, std::ostream& notes) {
  RunLocks locks;
  std::string failure;
  if (ranks.rank() == 0) {
    try {
      if (!out_dir.empty()) locks.out = std::make_unique<RunDirLock>(out_dir, "--out", notes);
      const fs::path from = resume.empty() ? fs::path() : resume_run_dir(resume);
      std::error_code ec;
      if (!from.empty() && !(locks.out && fs::equivalent(from, out_dir, ec)))
        locks.resume = std::make_unique<RunDirLock>(from, "--resume", notes, /*read_only=*/true);
    } catch (const std::exception& e) {
      failure = e.what();
      locks = {};
    }
  }
  const std::vector<std::string> all = ranks.allgather(failure);
  if (!all[0].empty()) throw RunStopped(all[0], kExitError, ranks.rank() == 0);
  return locks;
}

std::string describe_lock_record(const std::string& record) {
  if (record.empty()) return {};
  try {
    const nlohmann::json j = nlohmann::json::parse(record);
    if (j.is_object() && j.contains("pid") && j["pid"].is_number_integer() && j.contains("host") &&
        j["host"].is_string())
      return fmt::format("pid {} on host {}{}", j["pid"].get<int64_t>(),
                         j["host"].get<std::string>(),
                         j.contains("start_time") && j["start_time"].is_string()
                             ? " (since " + j["start_time"].get<std::string>() + ")"
                             : "");
  } catch (const nlohmann::json::exception&) {
  }
  return fmt::format("a record '{}'", record.substr(0, 200));
}

RunDirLock::RunDirLock(const fs::path& dir, const std::string& role, std::ostream& notes,
                       bool read_only)
    : file_(dir / kFileName) {
  std::error_code ec;
  if (!read_only) {
    fs::create_directories(dir, ec);
    DPLAB_CHECK(!ec, "{} {}: cannot create the directory: {}", role, dir.string(), ec.message());
  }
  fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0 && read_only && (errno == EACCES || errno == EROFS || errno == EPERM)) {
    fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT) return;  // nobody could lock it: nobody writes there
  }
  DPLAB_CHECK(fd_ >= 0, "{} {}: cannot open the lock file {}: {}", role, dir.string(),
              file_.string(), std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    // The holder writes its record right after it took the lock: give it a moment.
    std::string holder = describe_lock_record(read_record(fd_));
    for (int i = 0; i < 50 && holder.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      holder = describe_lock_record(read_record(fd_));
    }
    ::close(fd_);
    fd_ = -1;
    DPLAB_CHECK(err == EWOULDBLOCK, "{} {}: cannot lock {}: {}", role, dir.string(), file_.string(),
                std::strerror(err));
    DPLAB_FAIL("{} {}: another run is using this directory: {} holds its lock {}; {}", role,
               dir.string(), holder.empty() ? "a process that has not written its record" : holder,
               file_.string(),
               read_only ? "resume from it once that run has ended"
                         : "one run per output directory (wait until it ends, or choose another "
                           "directory)");
  }
  // Ours. A record left in the file is of a run that did not end in order (killed, crashed,
  // aborted): its lock went with its process.
  const std::string previous = read_record(fd_);
  const std::string host = this_host();
  const nlohmann::json mine = {{"host", host},
                               {"pid", int64_t(getpid())},
                               {"start_time", utc_iso8601(std::chrono::system_clock::now())}};
  if (!previous.empty()) {
    bool same_process = false;
    try {
      const nlohmann::json j = nlohmann::json::parse(previous);
      same_process =
          j.value("pid", int64_t(-1)) == int64_t(getpid()) && j.value("host", "") == host;
    } catch (const nlohmann::json::exception&) {
    }
    if (!same_process)
      notes << fmt::format(
          "dplab train: {} {}: its lock file {} named {}, which no longer holds it (a run that "
          "was killed or crashed); taking it over\n",
          role, dir.string(), file_.string(), describe_lock_record(previous));
  }
  const std::string text = mine.dump() + "\n";
  if (::ftruncate(fd_, 0) == 0 &&
      ::pwrite(fd_, text.data(), text.size(), 0) == ssize_t(text.size()))
    wrote_record_ = true;
  // A read-only lock file holds no record; the lock itself is what keeps writers out.
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  if (wrote_record_ && ::ftruncate(fd_, 0) != 0) {
    // The record stays: the next run reports it as a run that did not end in order.
  }
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace dplab
