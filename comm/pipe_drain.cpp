#include "dplab/comm/pipe_drain.h"

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <thread>

namespace dplab {

bool wait_until_pipe_is_read(int fd, std::chrono::milliseconds limit) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return true;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int unread = 0;
    if (ioctl(fd, FIONREAD, &unread) != 0 || unread == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace dplab
