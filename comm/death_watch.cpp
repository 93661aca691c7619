#include "dplab/comm/death_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dplab {

namespace {

// What the watcher needs, prepared before fork() (the watcher makes async-signal-safe calls only).
struct WatchPlan {
  int pipe_fd = -1;     // read end: 'q', 'a' or EOF
  int inotify_fd = -1;  // watch on `dir` (-1: none; the watcher then speaks on every silent death)
  char dir[64] = {};
  char own[16] = {};  // this rank's file name in `dir`
  int size = 0;       // ranks in the job (records are named 0 .. size-1)
  char message[512] = {};
  size_t message_len = 0;
};

bool same(const char* a, const char* b) {
  return std::strcmp(a, b) == 0;
}

// Writes "DIR/NAME" into `path` (snprintf is not async-signal-safe).
void record_path(char (&path)[96], const char* dir, const char* name) {
  size_t n = 0;
  for (const char* s = dir; *s && n < sizeof path - 2; ++s) path[n++] = *s;
  path[n++] = '/';
  for (const char* s = name; *s && n < sizeof path - 1; ++s) path[n++] = *s;
  path[n] = 0;
}

// The goodbye a rank wrote into its file: 'q', 'a', or 0 (none: it died silently). A file that
// is gone belongs to a rank that finished normally (its watcher tidies up at once).
char goodbye_of(const WatchPlan& p, const char* name) {
  char path[96];
  record_path(path, p.dir, name);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 'q' : 0;
  char c = 0;
  const ssize_t r = read(fd, &c, 1);
  close(fd);
  return r == 1 ? c : 0;
}

// Did a rank on this host report its own failure? It wrote 'a' before calling MPI_Abort, and
// the launcher may kill us before its process is gone, so look at every record, not the queue.
bool someone_aborted(const WatchPlan& p) {
  for (int r = 0; r < p.size; ++r) {
    char name[16];
    int n = 0;  // itoa by hand, for the same reason as record_path
    char digits[12];
    int v = r;
    do digits[n++] = static_cast<char>('0' + v % 10), v /= 10;
    while (v > 0);
    for (int i = 0; i < n; ++i) name[i] = digits[n - 1 - i];
    name[n] = 0;
    char path[96];
    record_path(path, p.dir, name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char c = 0;
    const ssize_t got = read(fd, &c, 1);
    close(fd);
    if (got == 1 && c == 'a') return true;
  }
  return false;
}

// After this watcher's rank died silently: should it name its rank? Reads the inotify queue up
// to this rank's own final close (waiting a little for it: the kernel may wake us on the pipe
// before it queues the close) and answers yes when that is the first close without a goodbye
// and no rank in the queue had aborted with its own message.
bool first_silent_death(const WatchPlan& p) {
  if (p.inotify_fd < 0) return true;
  if (someone_aborted(p)) return false;
  alignas(inotify_event) char buf[4096];
  bool someone_before = false;
  for (int waited_ms = 0; waited_ms < 2000;) {
    ssize_t len = read(p.inotify_fd, buf, sizeof buf);
    if (len <= 0) {
      if (len < 0 && errno != EAGAIN && errno != EINTR) return !someone_before;
      pollfd pf{p.inotify_fd, POLLIN, 0};
      poll(&pf, 1, 50);
      waited_ms += 50;
      continue;
    }
    for (char* q = buf; q < buf + len;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(q);
      q += sizeof(inotify_event) + ev->len;
      if (!(ev->mask & IN_CLOSE_WRITE) || ev->len == 0) continue;
      const char said = goodbye_of(p, ev->name);
      if (said == 'a') return false;  // that rank reported its own failure
      if (said == 'q') continue;      // that rank finished normally
      if (same(ev->name, p.own)) return !someone_before && !someone_aborted(p);
      someone_before = true;
    }
  }
  return !someone_before;  // our own close never showed up: best effort
}

// The watcher process: only async-signal-safe calls from here on.
[[noreturn]] void watch(const WatchPlan& p) {
  setsid();                 // outlive the launcher's group kill long enough to clean up
  signal(SIGINT, SIG_IGN);  // Ctrl-C goes to the whole group: let the rank decide
  // Hold nothing of the rank's but stderr (the launcher waits for its pipes to close), and not
  // its file: the file's final close must be the rank's death.
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != p.pipe_fd && fd != p.inotify_fd && fd != STDERR_FILENO) close(fd);
  char c = 0;
  ssize_t r;
  do r = read(p.pipe_fd, &c, 1);
  while (r < 0 && errno == EINTR);
  if (r != 1 && first_silent_death(p)) {
    ssize_t w = write(STDERR_FILENO, p.message, p.message_len);
    (void)w;
  }
  if (p.inotify_fd >= 0 && (r != 1 || c != 'q')) {
    // The job is going down: leave the records for the other watchers a while, then tidy up.
    sleep(3);
  }
  char path[96];
  record_path(path, p.dir, p.own);
  unlink(path);
  rmdir(p.dir);  // the last one out succeeds
  _exit(0);
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
  static WatchPlan plan;  // static: the forked child reads it after the parent's frame is gone
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const int len = std::snprintf(
      plan.message, sizeof plan.message,
      "dplab: rank %s of %s (pid %d on %s) died without reporting an error (killed by a signal "
      "or crashed); the job is stopping\n",
      rank, size, static_cast<int>(getpid()), host);
  plan.message_len = static_cast<size_t>(len > 0 ? len : 0);
  plan.size = std::atoi(size);
  // The ranks of one launcher proxy (their common parent on this host) share the directory, so
  // concurrent jobs don't see each other.
  std::snprintf(plan.dir, sizeof plan.dir, "/dev/shm/dplab-death-%d", static_cast<int>(getppid()));
  std::snprintf(plan.own, sizeof plan.own, "%s", rank);
  // The watch comes first, then this rank's file: every rank's file is created before its
  // first collective, so by the time anyone can die, every watcher watches every file.
  if ((mkdir(plan.dir, 0700) == 0 || errno == EEXIST)) {
    plan.inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (plan.inotify_fd >= 0 && inotify_add_watch(plan.inotify_fd, plan.dir, IN_CLOSE_WRITE) < 0) {
      close(plan.inotify_fd);
      plan.inotify_fd = -1;
    }
    char path[96];
    std::snprintf(path, sizeof path, "%s/%s", plan.dir, plan.own);
    record_ = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  }
  if (record_ < 0 && plan.inotify_fd >= 0) {  // no file of our own: don't pretend to order
    close(plan.inotify_fd);
    plan.inotify_fd = -1;
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
  if (plan.inotify_fd >= 0) close(plan.inotify_fd);  // the watcher's, not ours
  fd_ = fds[1];
}

void DeathWatch::say(char c) {
  if (record_ >= 0) {  // the goodbye goes into the record first: it must precede the close
    ssize_t w = write(record_, &c, 1);
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
  say('a');
}

}  // namespace dplab
