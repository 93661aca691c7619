// How `dplab train` ends a run that every rank stops together: one message (rank 0's), the same
// exit status on every rank and an ordinary MPI_Finalize, instead of MPI_Abort. An abort is
// for a failure only one rank saw; when every rank calls MPI_Abort at once, the launcher may
// tear the job down before any rank's message reaches its stderr.
#pragma once
#include <string>

#include "dplab/core/error.h"

namespace dplab {

// Exit statuses of `dplab train` (docs/cli.md, "Exit status").
constexpr int kExitError = 1;      // an error (bad input, a failed checkpoint write, ...)
constexpr int kExitNonfinite = 3;  // non-finite loss, gradient or state: nothing written
// Pre-empted by a signal in preempt.signals after writing a checkpoint (resume from it). Not
// 128 + signal (143 for SIGTERM): that is what a shell reports for a process the signal killed,
// before it could save anything; a job script must be able to tell "saved, requeue with
// --resume" from "killed".
constexpr int kExitPreempted = 4;

// A run stopped on every rank at the same point, by a decision the ranks share (non-finite
// values, pre-emption, an error every rank learnt of through RankGroup's exchange).
// run_training throws it on every rank with the same message; `dplab train` prints it on the
// rank with report() ("dplab: error: ..." for kExitError) and exits with exit_code().
class RunStopped : public Error {
 public:
  RunStopped(const std::string& what, int exit_code, bool report)
      : Error(what), exit_code_(exit_code), report_(report) {}
  int exit_code() const { return exit_code_; }
  bool report() const { return report_; }

 private:
  int exit_code_;
  bool report_;
};

}  // namespace dplab
