// DeathWatch: names a rank that dies without a word (SIGKILL, the OOM killer, a crash). MPI's
// launcher tears the whole job down when one process dies, but it names only a PID, and a
// process killed by a signal cannot report itself. So before MPI starts, each rank forks a tiny
// watcher that blocks on a pipe from its rank: when the pipe closes without the rank having
// said goodbye, the watcher prints "dplab: rank R of N (pid P on HOST) died without reporting
// an error" to stderr. The first watcher on a host to see a death leaves a marker so the
// watchers of ranks the launcher then kills stay quiet; a rank that fails on purpose
// (MpiEnv::abort) leaves the same marker after printing its own message.
#pragma once

namespace dplab {

class DeathWatch {
 public:
  // Starts the watcher when running under an MPI launcher (PMI_RANK/PMI_SIZE set); else no-op.
  // Call before any other thread starts (the child only makes async-signal-safe calls anyway).
  static DeathWatch& start();
  // The rank exits normally: the watcher leaves quietly.
  void stop();
  // The rank is aborting after reporting its own failure: the watcher leaves the marker so the
  // other ranks' watchers stay quiet, then leaves.
  void aborting();

 private:
  DeathWatch();
  void say(char c);
  int fd_ = -1;  // write end of the pipe to the watcher; -1: no watcher
};

}  // namespace dplab
