#include "dplab/comm/death_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dplab {

namespace {

// The marker is per launcher proxy (the ranks' common parent on this host), so concurrent jobs
// don't silence each other.
void marker_path(char* buf, size_t n, pid_t proxy) {
  std::snprintf(buf, n, "/dev/shm/dplab-death-%d", static_cast<int>(proxy));
}

// The watcher process: only async-signal-safe calls from here on.
[[noreturn]] void watch(int rfd, const char* message, size_t len, const char* marker) {
  setsid();                 // outlive the launcher's group kill long enough to clean up
  signal(SIGINT, SIG_IGN);  // Ctrl-C goes to the whole group: let the rank decide
  // Hold nothing of the rank's but stderr (the launcher waits for its pipes to close).
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != rfd && fd != STDERR_FILENO) close(fd);
  char c = 0;
  ssize_t r;
  do r = read(rfd, &c, 1);
  while (r < 0 && errno == EINTR);
  if (r == 1 && c == 'q') _exit(0);  // normal exit
  // 'a': the rank reported its own failure; EOF: it died silently.
  int m = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (m >= 0) {
    close(m);
    if (r != 1) {
      ssize_t w = write(STDERR_FILENO, message, len);
      (void)w;
    }
    sleep(3);  // long enough for the launcher to finish tearing the job down
    unlink(marker);
  }
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
  // Everything the watcher prints is prepared before fork().
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  static char message[512];
  static char marker[64];
  const int len = std::snprintf(
      message, sizeof message,
      "dplab: rank %s of %s (pid %d on %s) died without reporting an error (killed by a signal "
      "or crashed); the job is stopping\n",
      rank, size, static_cast<int>(getpid()), host);
  marker_path(marker, sizeof marker, getppid());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // no watcher: nothing else depends on it
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (child == 0) {
    close(fds[1]);
    watch(fds[0], message, static_cast<size_t>(len > 0 ? len : 0), marker);
  }
  close(fds[0]);
  fd_ = fds[1];
}

void DeathWatch::say(char c) {
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
