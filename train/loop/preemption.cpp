#include "dplab/train/loop/preemption.h"

#include <csignal>
#include <cstring>

#include <atomic>
#include <cctype>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

// The one piece of global mutable state in the training driver, and it has to be: a signal
// handler receives no context pointer, and all it may safely do is store into a lock-free
// atomic. The loop polls it once per step (PreemptionSignals::received).
std::atomic<int> g_received_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "signal flag must be lock-free");
// Whether a PreemptionSignals is alive (they share the flag above).
std::atomic<bool> g_installed{false};

extern "C" void on_preempt_signal(int sig) {
  int expected = 0;  // keep the first signal
  g_received_signal.compare_exchange_strong(expected, sig);
}

struct Known {
  const char* name;
  int sig;
};
constexpr Known kKnown[] = {
    {"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};

}  // namespace

struct PreemptionSignals::Saved {
  int sig;
  struct sigaction old;
};

std::vector<int> parse_preempt_signals(const std::string& spec) {
  std::vector<int> r;
  size_t start = 0;
  while (start < spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string item;
    for (char c : spec.substr(start, comma - start))
      if (!std::isspace(static_cast<unsigned char>(c)))
        item += char(std::toupper(static_cast<unsigned char>(c)));
    start = comma + 1;
    if (item.empty()) continue;
    if (item.rfind("SIG", 0) == 0) item = item.substr(3);
    int sig = 0;
    for (const Known& k : kKnown)
      if (item == k.name) sig = k.sig;
    DPLAB_CHECK_OPTION(
        sig != 0,
        "option preempt.signals = '{}': unknown signal '{}' (expected a comma-separated "
        "list of TERM, INT, HUP, USR1, USR2, or empty to disable)",
        spec, item);
    bool seen = false;
    for (int s : r) seen = seen || s == sig;
    if (!seen) r.push_back(sig);
  }
  return r;
}

std::string preempt_signal_name(int sig) {
  for (const Known& k : kKnown)
    if (k.sig == sig) return std::string("SIG") + k.name;
  return "signal " + std::to_string(sig);
}

PreemptionSignals::PreemptionSignals(const std::vector<int>& signals) : active_(!signals.empty()) {
  if (!active_) return;
  DPLAB_CHECK(!g_installed.exchange(true),
              "pre-emption signal handlers are already installed in this process (one training "
              "run at a time)");
  g_received_signal.store(0);
  for (int sig : signals) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_preempt_signal;
    sigemptyset(&sa.sa_mask);
    // SA_RESTART: reads and waits interrupted by the signal resume instead of failing with
    // EINTR (loader threads, MPI progress).
    sa.sa_flags = SA_RESTART;
    auto* saved = new Saved{sig, {}};
    if (sigaction(sig, &sa, &saved->old) != 0) {
      delete saved;
      restore();
      DPLAB_FAIL("pre-emption: sigaction({}) failed: {}", preempt_signal_name(sig),
                 std::strerror(errno));
    }
    saved_.push_back(saved);
  }
}

PreemptionSignals::~PreemptionSignals() {
  restore();
}

void PreemptionSignals::restore() {
  if (!active_) return;
  active_ = false;
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    sigaction((*it)->sig, &(*it)->old, nullptr);
    delete *it;
  }
  saved_.clear();
  g_installed.store(false);
}

int PreemptionSignals::received() const {
  return !active_ ? 0 : g_received_signal.load(std::memory_order_relaxed);
}

}  // namespace dplab
