#include "dplab/comm/death_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace dplab {

namespace {

constexpr int kMaxRanks = 1 << 16;  // ranks per job the order is kept for (bitmap below)

// What the watcher needs, prepared before fork() (the watcher makes plain system calls only: the
// rank may already have threads, so nothing that takes a lock inside libc).
struct WatchPlan {
  int pipe_fd = -1;     // the watcher's end of the socket: Registration, then 'q', 'a' or EOF
  int inotify_fd = -1;  // watch on `dir`; -1: no order known, the watcher never speaks
  // `dir` opened with a shared lock, taken before the fork and so held by the rank and its
  // watcher together until both are gone: the last watcher's tidy() (LOCK_EX) cannot remove
  // records another watcher, not yet scheduled, will still read.
  int dir_fd = -1;
  int record_fd = -1;  // the rank's record (the rank's copy of the plan only)
  char dir[128] = {};
  char own[16] = {};  // this rank's record name in `dir` (its world rank)
  int local_ranks = 0;
  bool failure_before_watch = false;             // a rank had died or reported before our watch
  unsigned char registered[kMaxRanks / 8] = {};  // records present when our watch began
  char message[512] = {};
  size_t message_len = 0;
};

// What the rank sends its watcher once it has registered (after the fork: the watcher must never
// hold the rank's record, or the record's close and lock would end with the watcher's copy).
struct Registration {
  char ok = 0;  // 0: registration failed, no order known
  char failure_before_watch = 0;
  unsigned char registered[kMaxRanks / 8] = {};
};

bool same(const char* a, const char* b) {
  return std::strcmp(a, b) == 0;
}

// A record's name is a world rank; -1 for anything else (a.RANK announcements, temporaries).
int rank_of(const char* name) {
  if (!*name) return -1;
  long v = 0;
  for (const char* s = name; *s; ++s) {
    if (*s < '0' || *s > '9' || v >= kMaxRanks) return -1;
    v = v * 10 + (*s - '0');
  }
  return v < kMaxRanks ? static_cast<int>(v) : -1;
}

bool is_announcement(const char* name) {
  return name[0] == 'a' && name[1] == '.';
}

void mark(unsigned char* bits, int r) {
  bits[r / 8] = static_cast<unsigned char>(bits[r / 8] | (1u << (r % 8)));
}

// The goodbye in record `name` ('q', 'a', or 0: none) and whether its rank is gone: its lock
// is free (the rank died or exited; the kernel queued its close before freeing the lock).
struct RecordState {
  bool gone = false;
  char goodbye = 0;
  int pid = 0;  // the rank's process (written at offset 8 when it registered)
};
RecordState record_state(int dir_fd, const char* name) {
  RecordState s;
  const int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;  // cannot tell: treat as alive, without a goodbye
  s.gone = flock(fd, LOCK_SH | LOCK_NB) == 0;
  char c = 0;
  if (pread(fd, &c, 1, 0) == 1) s.goodbye = c;
  int pid = 0;
  if (pread(fd, &pid, sizeof pid, 8) == sizeof pid) s.pid = pid;
  close(fd);  // drops our shared lock too
  return s;
}

// Has process `pid` begun to exit? Its main thread is exiting (PF_EXITING in the flags of
// /proc/PID/stat), a zombie, or gone. A rank's death is visible to its peers from that moment
// (UCX's CMA transport, for one, then fails to read its memory and aborts the reader), while its
// record closes only when its last thread has exited.
bool exiting(int pid) {
  if (pid <= 0) return false;
  char path[32] = "/proc/";
  int n = 6;
  char digits[12];
  int k = 0;
  for (int v = pid; v > 0; v /= 10) digits[k++] = static_cast<char>('0' + v % 10);
  while (k > 0) path[n++] = digits[--k];
  std::memcpy(path + n, "/stat", 6);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // gone
  char buf[1024];
  const ssize_t len = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (len <= 0) return true;
  buf[len] = 0;
  const char* s = nullptr;  // after the last ')': the command name may hold anything
  for (const char* q = buf; *q; ++q)
    if (*q == ')') s = q;
  if (!s || !s[1] || !s[2]) return false;
  const char state = s[2];
  if (state == 'Z' || state == 'X' || state == 'x') return true;
  // Fields after the name: 3 state, 4 ppid, 5 pgrp, 6 session, 7 tty, 8 tpgid, 9 flags.
  int field = 3;
  const char* q = s + 2;
  for (; *q && field < 9; ++q)
    if (*q == ' ') ++field;
  unsigned long flags = 0;
  for (; *q >= '0' && *q <= '9'; ++q) flags = flags * 10 + static_cast<unsigned long>(*q - '0');
  constexpr unsigned long kPfExiting = 0x4;  // PF_EXITING (include/linux/sched.h)
  return flags & kPfExiting;
}

// Is a rank of this host other than `own` already exiting while its record is still open? (Its
// death has begun but is not yet in the queues.) Reads the directory itself (plain system calls:
// called from a signal handler), so ranks that registered after us count too.
bool other_rank_exiting(const char* dir, const char* own) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool found = false;
  alignas(8) char buf[4096];
  for (long n; !found && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
    for (long off = 0; off < n && !found;) {
      unsigned short reclen;  // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char* name = buf + off + 19;
      off += reclen;
      if (rank_of(name) < 0 || same(name, own)) continue;
      const RecordState st = record_state(fd, name);
      found = !st.gone && exiting(st.pid);
    }
  }
  close(fd);
  return found;
}

// The world rank of the first rank of this host that died silently, read from `queue` (an
// inotify instance on the directory since before this rank registered): -1 when none has, or
// when it cannot be known: a rank reported its own failure first, events were lost, a rank had
// died or reported before our watch began, or a rank of this host had not yet registered when
// the first one died (it may have died, unseen, even earlier). See death_watch.h. Plain system
// calls only (the watcher calls it).
int first_silent_death(const WatchPlan& p, int queue, int dir_fd) {
  if (queue < 0 || dir_fd < 0 || p.failure_before_watch) return -1;
  unsigned char registered[kMaxRanks / 8];
  std::memcpy(registered, p.registered, sizeof registered);
  alignas(inotify_event) char buf[8192];
  for (;;) {
    const ssize_t len = read(queue, buf, sizeof buf);
    if (len < 0 && errno == EINTR) continue;
    if (len <= 0) return -1;  // nobody has died silently (yet)
    for (char* q = buf; q < buf + len;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(q);
      q += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) return -1;  // events lost: no order
      if (ev->len == 0) continue;
      const int r = rank_of(ev->name);
      if (ev->mask & IN_MOVED_TO) {
        if (r >= 0) mark(registered, r);
        continue;
      }
      if (!(ev->mask & IN_CLOSE_WRITE)) continue;
      if (is_announcement(ev->name)) return -1;  // a rank reported a failure first
      // 'q': a normal exit; 'd': a crash that followed another rank's death (on_fatal_signal).
      const char said = r < 0 ? 0 : record_state(dir_fd, ev->name).goodbye;
      if (r < 0 || said == 'q' || said == 'd') continue;
      int n = 0;  // ranks of this host registered before this death
      for (unsigned char b : registered)
        for (; b; b &= static_cast<unsigned char>(b - 1)) ++n;
      return n >= p.local_ranks ? r : -1;
    }
  }
}

// Removes what the job left in `dir` once no watcher is left: records whose rank is gone (their
// lock is free), announcements, then the directory. Plain system calls only.
void tidy(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {  // every watcher holds LOCK_SH while it runs
    alignas(8) char buf[4096];
    for (;;) {
      const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[]
        unsigned short reclen;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char* name = buf + off + 19;
        off += reclen;
        if (same(name, ".") || same(name, "..")) continue;
        if (!is_announcement(name)) {
          const int rf = openat(fd, name, O_RDONLY | O_CLOEXEC);
          if (rf < 0) continue;
          const bool free = flock(rf, LOCK_EX | LOCK_NB) == 0;
          close(rf);
          if (!free) continue;  // a live rank's record
        }
        unlinkat(fd, name, 0);
      }
    }
    rmdir(dir);  // fails, harmlessly, while a live rank's record is in it
  }
  close(fd);
}

// The watcher process.
[[noreturn]] void watch(WatchPlan& p) {
  setsid();                  // outlive the launcher's group kill long enough to report
  signal(SIGINT, SIG_IGN);   // Ctrl-C goes to the whole group: let the rank decide
  signal(SIGPIPE, SIG_IGN);  // a launcher gone before us: the message is lost, not the tidy-up
  // Hold nothing of the rank's but stderr (the launcher forwards it).
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != p.pipe_fd && fd != p.inotify_fd && fd != p.dir_fd && fd != STDERR_FILENO) close(fd);
  const int dir_fd = p.dir_fd;
  // The rank's registration; cut short when the rank dies before sending it (then no order).
  static Registration reg;  // static: 8 KB, and the watcher is one thread
  size_t got = 0;
  while (got < sizeof reg) {
    const ssize_t n = read(p.pipe_fd, reinterpret_cast<char*>(&reg) + got, sizeof reg - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  int own_fd = -1;  // this rank's record, opened read-only: its lock tells the rank's death
  if (got == sizeof reg && reg.ok && dir_fd >= 0) {
    own_fd = openat(dir_fd, p.own, O_RDONLY | O_CLOEXEC);
    p.failure_before_watch = reg.failure_before_watch;
    std::memcpy(p.registered, reg.registered, sizeof reg.registered);
  }
  if (own_fd < 0 && p.inotify_fd >= 0) {
    close(p.inotify_fd);
    p.inotify_fd = -1;  // no order known: stay quiet
  }
  char c = 0;
  ssize_t r = 0;
  if (got == sizeof reg) {
    do r = read(p.pipe_fd, &c, 1);
    while (r < 0 && errno == EINTR);
  }
  // Wait until the kernel has released the rank's lock (after a goodbye too: the rank is about
  // to exit, and its record can only be tidied away once it has): its close is then queued.
  if (own_fd >= 0)
    while (flock(own_fd, LOCK_SH) != 0 && errno == EINTR) {
    }
  if (r != 1) {  // the rank is gone without a goodbye
    if (first_silent_death(p, p.inotify_fd, dir_fd) == rank_of(p.own)) {
      ssize_t w = write(STDERR_FILENO, p.message, p.message_len);
      (void)w;
    }
  }
  if (own_fd >= 0) close(own_fd);
  if (dir_fd >= 0) close(dir_fd);  // the rank is gone: this drops the LOCK_SH
  if (p.dir[0]) tidy(p.dir);
  _exit(0);
}

// The launcher proxy's start time (field 22 of /proc/PID/stat): with its PID it names this job's
// directory, so a reused PID never meets an old job's records.
unsigned long long start_time_of(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* s = std::strrchr(buf, ')');  // the command name may hold spaces
  if (!s) return 0;
  int field = 2;
  for (; *s && field < 22; ++s)
    if (*s == ' ') ++field;
  return std::strtoull(s, nullptr, 10);
}

// Removes the directories of jobs whose launcher proxy is gone (a rank killed before it forked
// its watcher leaves its record behind, and nobody is left to tidy it).
void remove_stale_directories() {
  DIR* shm = opendir("/dev/shm");
  if (!shm) return;
  constexpr char prefix[] = "dplab-death-";
  while (const dirent* e = readdir(shm)) {
    if (std::strncmp(e->d_name, prefix, sizeof prefix - 1) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(e->d_name + sizeof prefix - 1, &end, 10);
    if (pid <= 0) continue;
    const unsigned long long start = *end == '-' ? std::strtoull(end + 1, nullptr, 10) : 0;
    char proc[64];
    std::snprintf(proc, sizeof proc, "/proc/%ld", pid);
    const bool alive = access(proc, F_OK) == 0 && (start == 0 || start_time_of(int(pid)) == start);
    if (alive) continue;
    char dir[sizeof "/dev/shm/" + sizeof e->d_name];  // d_name: up to NAME_MAX + 1 bytes
    std::snprintf(dir, sizeof dir, "/dev/shm/%s", e->d_name);
    tidy(dir);
  }
  closedir(shm);
}

// Before the fork: the directory and the inotify watches (the watcher's and the rank's own), so
// that every registration and death from now on is in both queues. False: no order.
bool prepare_watch(WatchPlan& p, int& rank_queue) {
  if (mkdir(p.dir, 0700) != 0 && errno != EEXIST) return false;
  p.dir_fd = open(p.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p.dir_fd < 0 || flock(p.dir_fd, LOCK_SH) != 0) return false;
  for (int* q : {&p.inotify_fd, &rank_queue}) {
    *q = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (*q >= 0 && inotify_add_watch(*q, p.dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
      close(*q);
      *q = -1;
    }
  }
  return p.inotify_fd >= 0 && rank_queue >= 0;
}

// After the fork, in the rank: creates its record (see death_watch.h) and reads what happened
// in the directory before the watches began into `reg`. Returns the record, or -1.
int register_rank(const WatchPlan& p, int rank, Registration& reg) {
  char tmp[160], path[160];
  std::snprintf(tmp, sizeof tmp, "%s/.%d.new", p.dir, rank);
  std::snprintf(path, sizeof path, "%s/%s", p.dir, p.own);
  int record = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  // Locked before it is visible: a record without a lock is always a rank that is gone.
  if (record >= 0 && (flock(record, LOCK_EX) != 0 || rename(tmp, path) != 0)) {
    close(record);
    unlink(tmp);
    return -1;
  }
  if (record < 0) return -1;
  const int pid = static_cast<int>(getpid());
  if (pwrite(record, &pid, sizeof pid, 8) != sizeof pid) {
    close(record);
    return -1;
  }
  // At exit the kernel releases a process's files in the reverse order of their descriptors
  // (task work runs last-in first-out; checked on Linux 6.x): the highest descriptor goes first.
  // So the record's close, the event the order of deaths is read from, comes before the
  // process's other closes, such as its socket to the launcher, which the launcher reacts to.
  rlimit lim{};
  const rlim_t high =
      getrlimit(RLIMIT_NOFILE, &lim) == 0 ? std::min<rlim_t>(lim.rlim_cur, 4096) : 0;
  if (high > 64) {
    const int moved = fcntl(record, F_DUPFD_CLOEXEC, static_cast<int>(high - 1));
    if (moved >= 0) {
      close(record);  // the lock stays: it belongs to the open file, which `moved` shares
      record = moved;
    }
  }
  DIR* d = opendir(p.dir);
  if (!d) return record;  // reg.ok stays 0: no order
  // What happened before the watch: records already there, and whether any rank had died
  // silently or reported a failure by then.
  while (const dirent* e = readdir(d)) {
    if (is_announcement(e->d_name)) reg.failure_before_watch = 1;
    const int r = rank_of(e->d_name);
    if (r < 0) continue;
    mark(reg.registered, r);
    if (same(e->d_name, p.own)) continue;
    const RecordState s = record_state(dirfd(d), e->d_name);
    if (s.gone && s.goodbye != 'q') reg.failure_before_watch = 1;
  }
  closedir(d);
  reg.ok = 1;
  return record;
}

}  // namespace

static void send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the watcher is gone: nothing to tell
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// The rank's copy of what was prepared for its watcher (the watcher has its own, forked).
static WatchPlan& plan_of_this_rank() {
  static WatchPlan plan;  // static: the forked child reads it after the parent's frame is gone
  return plan;
}

namespace {

// Global by necessity (a signal handler's state, the project's one accepted kind): the action
// on_fatal_signal restores before it re-raises.
struct sigaction previous_abort_action;

// SIGABRT in a rank (a library's fatal error, a failed assertion). When another rank of this host
// is already exiting with its record still open, this crash is most likely its consequence:
// UCX's CMA transport aborts a rank that reads the memory of a peer whose process is exiting,
// and the reader's death can then complete, and be queued, before the peer's. The record says
// so ('d'), and the watchers do not take this death for the first. Plain system calls only.
void on_fatal_signal(int sig) {
  WatchPlan& p = plan_of_this_rank();
  if (p.record_fd >= 0 && other_rank_exiting(p.dir, p.own)) {
    const char d = 'd';
    ssize_t w = pwrite(p.record_fd, &d, 1, 0);
    (void)w;
  }
  sigaction(sig, &previous_abort_action, nullptr);
  raise(sig);
}

}  // namespace

DeathWatch& DeathWatch::start() {
  static DeathWatch w;  // one per process
  return w;
}

DeathWatch::DeathWatch() {
  const char* rank = std::getenv("PMI_RANK");
  const char* size = std::getenv("PMI_SIZE");
  if (!rank || !size || std::atoi(size) <= 1) return;
  const int r = std::atoi(rank), n = std::atoi(size);
  if (r < 0 || r >= kMaxRanks) return;
  WatchPlan& plan = plan_of_this_rank();
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const int len = std::snprintf(
      plan.message, sizeof plan.message,
      "dplab: rank %d of %d (pid %d on %s) died without reporting an error (killed by a signal "
      "or crashed), the first rank on its host to die; the job is stopping\n",
      r, n, static_cast<int>(getpid()), host);
  plan.message_len = static_cast<size_t>(len > 0 ? len : 0);
  // Hydra's count of ranks on this host; without it, assume one host.
  const char* local = std::getenv("MPI_LOCALNRANKS");
  plan.local_ranks = local && std::atoi(local) > 0 ? std::atoi(local) : n;
  std::snprintf(plan.own, sizeof plan.own, "%d", r);
  bool ordered = false;
  if (n <= kMaxRanks) {
    remove_stale_directories();
    const int proxy = static_cast<int>(getppid());
    std::snprintf(plan.dir, sizeof plan.dir, "/dev/shm/dplab-death-%d-%llu", proxy,
                  start_time_of(proxy));
    ordered = prepare_watch(plan, queue_);
  }
  // A socket rather than a pipe: send() with MSG_NOSIGNAL cannot kill the rank by SIGPIPE.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) fds[0] = fds[1] = -1;
  plan.pipe_fd = fds[0];
  const pid_t child = fds[0] >= 0 ? fork() : -1;
  if (child == 0) {
    close(fds[1]);
    watch(plan);
  }
  if (plan.inotify_fd >= 0) close(plan.inotify_fd);  // the watcher's
  plan.inotify_fd = -1;
  if (fds[0] >= 0) close(fds[0]);
  if (child < 0) {
    if (fds[1] >= 0) close(fds[1]);
    fds[1] = -1;
  }
  fd_ = fds[1];
  if (ordered) {
    static_assert(sizeof dir_ == sizeof plan.dir);
    std::memcpy(dir_, plan.dir, sizeof dir_);
    static Registration reg;  // static: 8 KB
    record_ = register_rank(plan, r, reg);
    plan.record_fd = record_;
    plan.failure_before_watch = reg.failure_before_watch;
    std::memcpy(plan.registered, reg.registered, sizeof reg.registered);
    if (!reg.ok && queue_ >= 0) {
      close(queue_);
      queue_ = -1;
    }
    if (fd_ >= 0) send_all(fd_, &reg, sizeof reg);
    if (record_ >= 0 && reg.ok) {
      struct sigaction sa {};
      sa.sa_handler = on_fatal_signal;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGABRT, &sa, &previous_abort_action);
    }
  } else {
    if (queue_ >= 0) close(queue_);
    queue_ = -1;
    static Registration none;  // ok = 0: the watcher stays quiet
    if (fd_ >= 0) send_all(fd_, &none, sizeof none);
  }
}

void DeathWatch::say(char c) {
  if (record_ >= 0) {  // the goodbye goes into the record first: it must precede the close
    ssize_t w = pwrite(record_, &c, 1, 0);
    (void)w;
  }
  if (fd_ < 0) return;
  send_all(fd_, &c, 1);
  close(fd_);
  fd_ = -1;
}

int DeathWatch::first_silent_death() {
  if (queue_ < 0 || !dir_[0]) return -1;
  const int dir_fd = open(dir_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int first = dplab::first_silent_death(plan_of_this_rank(), queue_, dir_fd);
  if (dir_fd >= 0) close(dir_fd);
  close(queue_);  // read once: the answer is for the failure being reported now
  queue_ = -1;
  return first;
}

void DeathWatch::stop() {
  say('q');
}

void DeathWatch::aborting() {
  if (dir_[0]) {
    // An announcement the other watchers see in their queues, in order with the deaths: the
    // ranks the launcher kills after this are not named.
    char path[192];
    std::snprintf(path, sizeof path, "%s/a.%s", dir_, std::getenv("PMI_RANK"));
    const int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  say('a');
}

}  // namespace dplab
