// Pre-emption: Slurm (and most batch systems) warn a job before killing it by sending a signal
// to every task (SIGTERM, or the one `--signal=USR1@60` asks for); MPICH's mpiexec forwards
// SIGTERM and SIGUSR1 it receives to every rank. With option preempt.signals (default
// "TERM,USR1") and an output directory, such a signal makes every rank stop after the same
// step (StepAgreement: a signal on one rank stops all, at most StepAgreement::kLag steps later or
// at the end of the epoch, after its evaluation), write a checkpoint to DIR/checkpoints/ (every
// rank's state, train/state/checkpoint.h) and exit with status 4 (kExitPreempted); `--resume
// DIR` continues exactly where it stopped.
// A signal arriving after the last step changes nothing: the run ends normally. Without an
// output directory nothing could be saved, so the signals keep their default action.
#pragma once
#include <string>
#include <vector>

namespace dplab {

// "TERM,USR1" -> {SIGTERM, SIGUSR1}. Names with or without "SIG", any case: TERM, INT, HUP,
// USR1, USR2. "" -> {} (disabled). Anything else throws naming the option.
std::vector<int> parse_preempt_signals(const std::string& spec);
// SIGUSR1 -> "SIGUSR1".
std::string preempt_signal_name(int sig);

// While alive, the given signals only set a flag (the previous handlers come back on
// destruction). One instance at a time per process (the flag is process-wide).
class PreemptionSignals {
 public:
  explicit PreemptionSignals(const std::vector<int>& signals);
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;
  // The first signal received since construction, 0 if none (0 after release()).
  int received() const;
  // Puts the previous handlers back now (a finished run), so another run may install its own.
  void release() { restore(); }

 private:
  struct Saved;
  void restore();  // puts the previous handlers back
  bool active_ = false;
  std::vector<Saved*> saved_;
};

}  // namespace dplab
