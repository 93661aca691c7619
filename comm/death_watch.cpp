#include "dplab/comm/death_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dplab {

namespace {

constexpr int kMaxRanks = 1 << 16;  // ranks per job the order is kept for (bitmap below)

// What the watcher needs, prepared before fork() (the watcher makes plain system calls only: the
// rank may already have threads, so nothing that takes a lock inside libc).
struct WatchPlan {
  int pipe_fd = -1;     // read end: 'q', 'a' or EOF
  int inotify_fd = -1;  // watch on `dir`; -1: no order known, the watcher never speaks
  int own_fd = -1;      // this rank's record, opened again read-only: its lock tells the death
  char dir[128] = {};
  char own[16] = {};  // this rank's record name in `dir` (its world rank)
  int local_ranks = 0;
  bool failure_before_watch = false;             // a rank had died or reported before our watch
  unsigned char registered[kMaxRanks / 8] = {};  // records present when our watch began
  char message[512] = {};
  size_t message_len = 0;
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
};
RecordState record_state(int dir_fd, const char* name) {
  RecordState s;
  const int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;  // cannot tell: treat as alive, without a goodbye
  s.gone = flock(fd, LOCK_SH | LOCK_NB) == 0;
  char c = 0;
  if (pread(fd, &c, 1, 0) == 1) s.goodbye = c;
  close(fd);  // drops our shared lock too
  return s;
}

// After this watcher's rank died silently (its close is queued): may it be named as the first
// rank of this host to die? See death_watch.h for the three conditions.
bool first_silent_death(const WatchPlan& p, int dir_fd) {
  if (p.inotify_fd < 0 || dir_fd < 0 || p.failure_before_watch) return false;
  unsigned char registered[kMaxRanks / 8];
  std::memcpy(registered, p.registered, sizeof registered);
  alignas(inotify_event) char buf[8192];
  for (;;) {
    const ssize_t len = read(p.inotify_fd, buf, sizeof buf);
    if (len < 0 && errno == EINTR) continue;
    if (len <= 0) return false;  // queue empty before our own close: cannot happen; stay quiet
    for (char* q = buf; q < buf + len;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(q);
      q += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) return false;  // events lost: no order
      if (ev->len == 0) continue;
      const int r = rank_of(ev->name);
      if (ev->mask & IN_MOVED_TO) {
        if (r >= 0) mark(registered, r);
        continue;
      }
      if (!(ev->mask & IN_CLOSE_WRITE)) continue;
      if (is_announcement(ev->name)) return false;  // a rank reported a failure before ours died
      if (r < 0) continue;
      if (same(ev->name, p.own)) {
        int n = 0;  // ranks of this host registered before our death
        for (unsigned char b : registered)
          for (; b; b &= static_cast<unsigned char>(b - 1)) ++n;
        return n >= p.local_ranks;
      }
      if (record_state(dir_fd, ev->name).goodbye != 'q') return false;  // died before ours
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
[[noreturn]] void watch(const WatchPlan& p) {
  setsid();                  // outlive the launcher's group kill long enough to report
  signal(SIGINT, SIG_IGN);   // Ctrl-C goes to the whole group: let the rank decide
  signal(SIGPIPE, SIG_IGN);  // a launcher gone before us: the message is lost, not the tidy-up
  // Hold nothing of the rank's but stderr (the launcher forwards it), and not the rank's record
  // description: its final close and its lock must end with the rank.
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != p.pipe_fd && fd != p.inotify_fd && fd != p.own_fd && fd != STDERR_FILENO) close(fd);
  // While this watcher runs, nobody tidies the directory away (tidy() needs LOCK_EX).
  const int dir_fd = p.dir[0] ? open(p.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dir_fd >= 0) flock(dir_fd, LOCK_SH);
  char c = 0;
  ssize_t r;
  do r = read(p.pipe_fd, &c, 1);
  while (r < 0 && errno == EINTR);
  // Wait until the kernel has released the rank's lock (after a goodbye too: the rank is about
  // to exit, and its record can only be tidied away once it has): its close is then queued.
  if (p.own_fd >= 0)
    while (flock(p.own_fd, LOCK_SH) != 0 && errno == EINTR) {
    }
  if (r != 1) {  // the rank is gone without a goodbye
    if (first_silent_death(p, dir_fd)) {
      ssize_t w = write(STDERR_FILENO, p.message, p.message_len);
      (void)w;
    }
  }
  if (p.own_fd >= 0) close(p.own_fd);
  if (dir_fd >= 0) close(dir_fd);  // drops our LOCK_SH
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

// Registers this rank in the shared directory (see death_watch.h) and reads what happened there
// before our watch began. On any failure the plan keeps inotify_fd = -1: the watcher stays
// quiet rather than guess.
int register_rank(WatchPlan& p, int rank) {
  if (mkdir(p.dir, 0700) != 0 && errno != EEXIST) return -1;
  p.inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (p.inotify_fd < 0) return -1;
  int record = -1;
  char tmp[160], path[160];
  std::snprintf(tmp, sizeof tmp, "%s/.%d.new", p.dir, rank);
  std::snprintf(path, sizeof path, "%s/%s", p.dir, p.own);
  // The watch first: every registration and death from now on is in our queue.
  if (inotify_add_watch(p.inotify_fd, p.dir, IN_CLOSE_WRITE | IN_MOVED_TO) >= 0) {
    record = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    // Locked before it is visible: a record without a lock is always a rank that is gone.
    if (record >= 0 && (flock(record, LOCK_EX) != 0 || rename(tmp, path) != 0)) {
      close(record);
      unlink(tmp);
      record = -1;
    }
  }
  if (record >= 0) p.own_fd = open(path, O_RDONLY | O_CLOEXEC);
  const int dir_fd = open(p.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = dir_fd >= 0 ? fdopendir(dir_fd) : nullptr;
  if (record < 0 || p.own_fd < 0 || !d) {
    if (d)
      closedir(d);
    else if (dir_fd >= 0)
      close(dir_fd);
    if (p.own_fd >= 0) close(p.own_fd);
    p.own_fd = -1;
    close(p.inotify_fd);
    p.inotify_fd = -1;
    return record;
  }
  // What happened before the watch: records already there, and whether any rank had died
  // silently or reported a failure by then.
  while (const dirent* e = readdir(d)) {
    if (is_announcement(e->d_name)) p.failure_before_watch = true;
    const int r = rank_of(e->d_name);
    if (r < 0) continue;
    mark(p.registered, r);
    if (same(e->d_name, p.own)) continue;
    const RecordState s = record_state(dirfd(d), e->d_name);
    if (s.gone && s.goodbye != 'q') p.failure_before_watch = true;
  }
  closedir(d);
  return record;
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
  static WatchPlan plan;  // static: the forked child reads it after the parent's frame is gone
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
  if (n <= kMaxRanks) {
    const int proxy = static_cast<int>(getppid());
    std::snprintf(plan.dir, sizeof plan.dir, "/dev/shm/dplab-death-%d-%llu", proxy,
                  start_time_of(proxy));
    record_ = register_rank(plan, r);
    std::snprintf(dir_, sizeof dir_, "%s", plan.dir);
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // no watcher: nothing else depends on it
  plan.pipe_fd = fds[0];
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (child == 0) {
    close(fds[1]);
    watch(plan);
  }
  close(fds[0]);
  // The watcher's, not ours (our own_fd copy would hold no lock, but keep the table clean).
  if (plan.inotify_fd >= 0) close(plan.inotify_fd);
  if (plan.own_fd >= 0) close(plan.own_fd);
  fd_ = fds[1];
}

void DeathWatch::say(char c) {
  if (record_ >= 0) {  // the goodbye goes into the record first: it must precede the close
    ssize_t w = pwrite(record_, &c, 1, 0);
    (void)w;
  }
  if (fd_ < 0) return;
  ssize_t w = write(fd_, &c, 1);
  (void)w;
  close(fd_);
  fd_ = -1;
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
