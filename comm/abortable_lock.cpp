#include "dplab/comm/abortable_lock.h"

#include <fmt/format.h>

#include "dplab/core/error.h"
#include "dplab/core/host_wait.h"

namespace dplab {

AbortableLock::Guard::Guard(AbortableLock& l, const std::string& what, double timeout_s) : l_(l) {
  if (!l_.mu_.try_lock()) {
    try {
      poll_until([this] { return l_.mu_.try_lock(); },
                 fmt::format("{}: waiting for the NCCL communicators' lock (held by: {})", what,
                             l_.holder()),
                 timeout_s);
    } catch (const Error& e) {
      l_.request_abort(e.what());  // takes and releases the lock once the holder has let go
      throw;
    }
  }
  l_.set_holder(what);
}

AbortableLock::Guard::~Guard() {
  l_.set_holder("");
  l_.mu_.unlock();
}

void AbortableLock::request_abort(const std::string& why) noexcept {
  try {
    {
      std::lock_guard<std::mutex> lock(note_mu_);
      if (why_.empty()) why_ = why;
    }
    requested_.store(true, std::memory_order_release);
    // Every holder polls and lets go at its next poll: this waits one poll interval at most.
    std::lock_guard<std::mutex> lock(mu_);
    abort_all_(why);
  } catch (...) {  // a mutex error: nothing sensible is left to do here
  }
}

void AbortableLock::abort_if_requested(const std::string& what) {
  if (!abort_requested()) return;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(note_mu_);
    why = why_;
  }
  abort_all_(why);
  DPLAB_FAIL("{}: the NCCL communicators were aborted from another thread ({})", what, why);
}

void AbortableLock::set_holder(const std::string& what) {
  std::lock_guard<std::mutex> lock(note_mu_);
  holder_ = what;
}

std::string AbortableLock::holder() const {
  std::lock_guard<std::mutex> lock(note_mu_);
  return holder_.empty() ? std::string("an operation on the family") : holder_;
}

}  // namespace dplab
