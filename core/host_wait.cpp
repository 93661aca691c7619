#include "dplab/core/host_wait.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "dplab/core/error.h"

namespace dplab {
namespace {
using Clock = std::chrono::steady_clock;

// Configuration (see the header): the limit, and the hooks behind a mutex (copied per wait).
std::atomic<double>& limit() {
  static std::atomic<double> seconds{0.0};
  return seconds;
}
struct Hooks {
  std::mutex mu;
  std::shared_ptr<const HostWaitHooks> hooks = std::make_shared<HostWaitHooks>();
};
Hooks& hooks() {
  static Hooks h;
  return h;
}
std::shared_ptr<const HostWaitHooks> current_hooks() {
  std::lock_guard<std::mutex> lock(hooks().mu);
  return hooks().hooks;
}
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

void set_host_wait_timeout(double seconds, HostWaitHooks h) {
  limit().store(seconds > 0 ? seconds : 0.0);
  std::lock_guard<std::mutex> lock(hooks().mu);
  hooks().hooks = std::make_shared<const HostWaitHooks>(std::move(h));
}

double host_wait_timeout() {
  return limit().load();
}

void poll_until(const std::function<bool()>& ready, const std::string& what) {
  poll_until(ready, what, host_wait_timeout());
}

void poll_until(const std::function<bool()>& ready, const std::string& what, double timeout_s) {
  const auto start = Clock::now();
  std::shared_ptr<const HostWaitHooks> h;  // fetched once the wait is not short
  for (int polls = 0;; ++polls) {
    if (ready()) return;
    if (polls < 64) continue;  // short waits (a small copy) finish within the spin
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    if ((polls & 63) != 0) continue;
    if (!h) h = current_hooks();
    const double waited = seconds_since(start);
    if (h->idle) h->idle(what, waited);
    if (timeout_s > 0 && waited > timeout_s) {
      const std::string who = h->on_timeout ? h->on_timeout(what) : std::string();
      DPLAB_FAIL("{}: the device did not finish within {:g} s (comm.timeout_s); {}", what,
                 timeout_s,
                 who.empty() ? "the stream probably waits for a collective that a stalled or "
                               "failed peer never joined"
                             : who);
    }
  }
}

bool poll_quietly(const std::function<bool()>& ready, double timeout_s) {
  const auto start = Clock::now();
  try {
    for (int polls = 0;; ++polls) {
      if (ready()) return true;
      if (polls < 64) continue;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (timeout_s > 0 && seconds_since(start) > timeout_s) return false;
    }
  } catch (...) {
    return false;
  }
}

}  // namespace dplab
