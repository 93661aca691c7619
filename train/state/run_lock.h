// One run per output directory (issue #38: two `dplab train --out DIR` at once both exited 0,
// leaving both runs' checkpoints mixed in DIR, one run's run.json and a metrics.jsonl with a
// torn line, which a later --resume took without complaint).
//
// A run holds an exclusive advisory lock (flock(2)) on DIR/.lock for its whole life; rank 0
// takes it before anything is written into DIR. The file's content names the holder (host, pid,
// start time) for the message of a run that finds it taken. The kernel releases a flock when
// the process ends, however it ends (SIGKILL and the OOM killer included), so a lock file left
// by a killed run is free: the next run takes it and rewrites the record, saying on stderr that
// the record named another process. A run that ends normally empties the record first.
#pragma once
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "dplab/train/loop/rank_group.h"

namespace dplab {

class RunDirLock {
 public:
  static constexpr const char* kFileName = ".lock";

  // Locks `dir` (created when missing), or throws dplab::Error naming the directory and the
  // process that holds it. `role` names the directory in messages ("--out", "--resume"). With
  // `read_only`, a directory this process cannot write in is read under no lock when it has no
  // lock file (no run of this dplab wrote there) and under a lock without a record otherwise.
  // A record of another process in a free lock file (a run that was killed) is said on `notes`.
  RunDirLock(const std::filesystem::path& dir, const std::string& role, std::ostream& notes,
             bool read_only = false);
  // Empties the record (a lock file left empty was released in order), then releases.
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  bool wrote_record_ = false;
};

// The directory locks of a run; rank 0 holds them, the other ranks none.
struct RunLocks {
  std::unique_ptr<RunDirLock> out;     // --out, for the run's life
  std::unique_ptr<RunDirLock> resume;  // --resume's run directory when not --out, while it is read
};

// Rank 0 locks `out_dir` (when set) and the run directory that `resume` names (when set and not
// `out_dir`: RUN for RUN and RUN/checkpoints/step_<N>; nothing for a checkpoint directory
// outside a run directory). Collective over `ranks`: when rank 0 cannot lock, every rank throws
// RunStopped (exit status 1) with rank 0's message, reported by rank 0 only, so the other
// ranks stop too instead of waiting for rank 0 in their next collective.
RunLocks lock_run_dirs(const std::string& out_dir, const std::string& resume,
                       const RankGroup& ranks, std::ostream& notes);

// "pid P on host H (since T)" from a lock file's record; the record itself (quoted, at most 200
// bytes) when it is not one; empty for an empty record.
std::string describe_lock_record(const std::string& record);

}  // namespace dplab
