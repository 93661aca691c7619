// RankGroup: the ranks of a training run as the checkpoint code sees them: every rank writes
// and reads its own file, and they agree on the outcome by exchanging short status strings.
// With one rank there is no MPI at all (algo local); with more, MPI_COMM_WORLD (the strategy's
// ranks are the world's, whichever backend carries the gradients).
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace dplab {

class RankGroup {
 public:
  // `rank` of `size` (size 1: a single process, no MPI). An exchange waits at most `timeout_s`
  // for the other ranks (0: without a limit); the training driver passes comm.timeout_s, so a
  // stopped rank is named as fast at an epoch's end as in any other collective.
  RankGroup(int rank, int size, double timeout_s = kTimeoutS);
  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_s() const { return timeout_s_; }
  // The same ranks for exchanges that follow file I/O on some rank (a checkpoint's files, the
  // trace's): they wait at least kTimeoutS.
  RankGroup for_files() const {
    return RankGroup(rank_, size_,
                     timeout_s_ > 0 && timeout_s_ < kTimeoutS ? kTimeoutS : timeout_s_);
  }
  // Every rank's string, in rank order (collective). Waits politely (comm/communicator.h's
  // backoff) for at most timeout_s(): a rank that never arrives makes it throw, naming it
  // (comm/stall_report.h).
  std::vector<std::string> allgather(const std::string& mine) const;
  void barrier() const { allgather({}); }
  // Every rank throws RunStopped(why, kExitError) (train/loop/run_stopped.h), reported by rank
  // 0 only. Only for a failure every rank knows of (e.g. from allgather): a rank that does not
  // call it would wait in the next exchange until timeout_s().
  [[noreturn]] void fail_together(const std::string& why) const;
  // Runs `f` on every rank and exchanges the outcomes; when it threw on any rank, every rank
  // fails together with the first failure, "rank R: why" (just "why" when every rank failed
  // alike).
  void agree(const std::function<void()>& f) const;
  // Generous: a slow rank may be writing a large file to a slow disk meanwhile.
  static constexpr double kTimeoutS = 1800;

 private:
  int rank_, size_;
  double timeout_s_;
};

}  // namespace dplab
