// DeathWatch: names a rank that dies without a word (SIGKILL, the OOM killer, a crash). MPI's
// launcher tears the whole job down when one process dies, but it names only a PID, and a
// process killed by a signal cannot report itself. So each rank forks a tiny watcher that blocks
// on a socket from its rank: when it closes without the rank having said goodbye, the watcher
// may print "dplab: rank R of N (pid P on HOST) died without reporting an error".
//
// Which rank died first? Once one rank dies the launcher kills the others, and their watchers
// wake too, in whatever order the scheduler picks. The kernel knows the real order. The ranks of
// one launcher proxy (one host) share a directory, /dev/shm/dplab-death-PROXYPID-STARTTIME:
//  - Before forking its watcher, a rank adds two inotify watches on the directory (one for the
//    watcher, one for itself), so both queues hold, in kernel order, every registration and
//    death from then on.
//  - After the fork, the rank registers: it creates its record RANK under a temporary name,
//    takes an exclusive flock on it and renames it into place (an IN_MOVED_TO event), keeping it
//    open until it dies. Its death releases the lock and closes the record (an IN_CLOSE_WRITE
//    event); the kernel queues that event before it releases the lock, so "unlocked" implies
//    "close queued". Only the rank ever holds the record: the watcher, forked before, cannot
//    keep it open past the rank's death.
//  - Then the rank reads the directory: records already there, and whether any of them is
//    unlocked without a goodbye (a rank that died before our watches began). It sends that to
//    its watcher over their socket.
//  - Goodbyes: a rank that exits normally writes 'q' into its record; a rank that reports its
//    own failure ("rank R of N failed: ...") first creates a.RANK in the directory (an event in
//    the queues too, ordered with the deaths). A rank that gets SIGABRT while another rank of
//    its host is already exiting with its record still open writes 'd' (a consequence, not a
//    first death): UCX's CMA transport aborts a rank that reads the memory of a peer whose
//    process is exiting, and the reader's death can complete, and be queued, before the peer's,
//    whose last threads are still going.
// When its rank dies silently, the watcher first takes a shared lock on the record (it waits
// until the kernel has released the rank's lock, so the rank's close is in its queue: no sleep,
// no polling), then names its rank only if all of these hold:
//  1. no rank had died or reported a failure before the watches began;
//  2. in the queue before this rank's close, no other rank died silently (without 'q' or 'd')
//     or reported;
//  3. every rank of this host had registered before this rank's close. A rank that dies before
//     it registers (killed during process start) is invisible to the others, so a watcher that
//     cannot rule that out stays quiet.
// So a watcher never names a rank that some other rank of its host died before. A rank that
// fails on its own afterwards (an MPI error, a timeout) uses its own queue the same way, and its
// message names the rank that died first rather than itself (MpiEnv::abort).
//
// Root causes of the wrong names the earlier watch gave (3 of 16 SIGKILL runs): (1) it started
// only when MPI did, after data loading, so a rank killed earlier showed in no queue and the
// survivor the launcher killed first looked like the first death (likewise a rank that
// registered after another had died never saw that death); (2) the watcher was forked holding
// the rank's record and closed it only once scheduled, so a rank killed in that window had its
// death queued when its watcher closed the copy, possibly after a survivor's; (3) it waited a
// fixed 2 s for its own rank's close and then guessed. Found on the way by the kill campaign:
// (4) the launcher reacts to a rank's PMI socket closing, and the kernel closes a dying
// process's files from the highest descriptor down (Linux 6.x), so the record now sits at a
// high descriptor and closes first; (5) the CMA crash above.
//
// Limits: the order is known per host. When the first death is on another host, the launcher
// kills the ranks here and the first of them is named too (it did die by a signal). A rank killed
// in the milliseconds between its process start and DeathWatch::start() is named by nobody
// (hydra's banner then gives its PID). Measured with tools/scripts/kill_campaign.py: see
// docs/distributed.md, section "When a rank fails".
#pragma once

namespace dplab {

class DeathWatch {
 public:
  // Starts the watcher when running under an MPI launcher with more than one rank (PMI_RANK and
  // PMI_SIZE set); else a no-op. Call as early as possible, and before any other thread starts.
  static DeathWatch& start();
  // The rank exits normally: the watcher leaves quietly.
  void stop();
  // The rank is aborting after reporting its own failure: watchers of ranks that die after this
  // call stay quiet.
  void aborting();
  // For this rank's own failure message: the world rank of the first rank of this host that
  // died silently before now (a failure of this rank is then most likely its consequence), or
  // -1 when none did or the order cannot be known (same rules as the watchers'). Call once.
  int first_silent_death();

 private:
  DeathWatch();
  void say(char c);
  int fd_ = -1;         // write end of the pipe to the watcher; -1: no watcher
  int record_ = -1;     // this rank's record in the shared directory (its goodbye goes there)
  char dir_[128] = {};  // the shared directory; empty: none
  int queue_ = -1;      // this rank's own inotify queue on the directory (first_silent_death)
};

}  // namespace dplab
