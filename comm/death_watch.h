// DeathWatch: names a rank that dies without a word (SIGKILL, the OOM killer, a crash). MPI's
// launcher tears the whole job down when one process dies, but it names only a PID, and a
// process killed by a signal cannot report itself. So before MPI starts, each rank forks a tiny
// watcher that blocks on a pipe from its rank: when the pipe closes without the rank having
// said goodbye, the watcher prints "dplab: rank R of N (pid P on HOST) died without reporting
// an error" to stderr.
//
// Which rank died first? Once one rank dies the launcher kills the others, and their watchers
// wake too; on a loaded machine a later victim's watcher can be scheduled before the first
// one's, so "first watcher to wake" is not "first rank to die". The kernel knows the order:
// each rank holds a file open in a directory shared by the ranks of its launcher proxy
// (/dev/shm/dplab-death-PROXYPID/RANK), and every watcher has an inotify watch on that
// directory, whose queue records the files' final closes (the ranks' deaths) in the order they
// happened. A rank that leaves on purpose first writes its goodbye into its file ('q': normal
// exit, 'a': it reported its own failure). A watcher whose rank died speaks only when its rank's
// is the first close of a file with no goodbye, and no rank on its host aborted with a message
// of its own. The order is known per host: when the first death is on another host, the rank
// the launcher happens to kill first here is named too (it did die by a signal), after the
// real one.
#pragma once

namespace dplab {

class DeathWatch {
 public:
  // Starts the watcher when running under an MPI launcher (PMI_RANK/PMI_SIZE set); else no-op.
  // Call before any other thread starts (the child only makes async-signal-safe calls anyway).
  static DeathWatch& start();
  // The rank exits normally: the watcher leaves quietly.
  void stop();
  // The rank is aborting after reporting its own failure: the other ranks' watchers stay quiet.
  void aborting();

 private:
  DeathWatch();
  void say(char c);
  int fd_ = -1;      // write end of the pipe to the watcher; -1: no watcher
  int record_ = -1;  // this rank's file in the shared directory (its goodbye goes there)
};

}  // namespace dplab
