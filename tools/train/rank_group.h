// RankGroup: the ranks of a training run as the checkpoint code sees them: every rank writes
// and reads its own file, and they agree on the outcome by exchanging short status strings.
// With one rank there is no MPI at all (algo local); with more, MPI_COMM_WORLD (the strategy's
// ranks are the world's, whichever backend carries the gradients).
#pragma once
#include <string>
#include <vector>

namespace dplab {

class RankGroup {
 public:
  // `rank` of `size` (size 1: a single process, no MPI).
  RankGroup(int rank, int size);
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank's string, in rank order (collective). Waits politely (comm/communicator.h's
  // backoff) for at most kTimeoutS: a rank that never arrives makes it throw.
  std::vector<std::string> allgather(const std::string& mine) const;
  void barrier() const { allgather({}); }
  // Generous: a slow rank may be writing a large file to a slow disk meanwhile.
  static constexpr double kTimeoutS = 1800;

 private:
  int rank_, size_;
};

}  // namespace dplab
