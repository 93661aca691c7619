// Backend-independent parts of Communicator's requests (comm/communicator.h): waiting politely,
// and Request's test, wait and completion, in real time or on a rank's virtual clock
// (docs/virtual_cluster.md; virtual times come from comm/virtual_communicator.cpp). The MPI
// backend is comm/mpi_communicator.cpp, NCCL's
// comm/nccl_communicator.cpp.
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <mutex>
#include <thread>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/stall_report.h"
#include "dplab/core/error.h"

namespace dplab {

std::string reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::average:
      return "average";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

// ---- waiting ---------------------------------------------------------------------------------

namespace {
// A thread's sleeps overrun by its timer slack, 50 us by default on Linux: a 20 us backoff
// sleep would last ~70 us, and a completion be seen that much later. The slack is per thread,
// so it is lowered once on each thread that backs off.
void sleep_for_s(double s) {
  thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)slack_set;
  timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
  nanosleep(&ts, nullptr);
}
// The calling thread's HelperWaits flag (null outside a scope).
thread_local const std::atomic<bool>* t_compute_waiting = nullptr;
}  // namespace

HelperWaits::HelperWaits(const std::atomic<bool>* compute_waiting) : previous_(t_compute_waiting) {
  t_compute_waiting = compute_waiting;
}

HelperWaits::~HelperWaits() {
  t_compute_waiting = previous_;
}

void polite_wait(const std::function<bool()>& done, const WaitOptions& opt,
                 const std::function<std::string()>& what,
                 const std::shared_ptr<const std::vector<int>>& members) {
  const auto start = Clock::now();
  int tests = 0;
  double helper_sleep_s = opt.sleep_s;  // grows while the compute thread computes
  while (!done()) {
    ++tests;
    const bool beside_compute =
        t_compute_waiting != nullptr && !t_compute_waiting->load(std::memory_order_relaxed);
    if (opt.policy == WaitPolicy::spin && beside_compute) {
      sleep_for_s(helper_sleep_s);  // no spin first: each test costs the compute its core
      helper_sleep_s = std::min(2 * helper_sleep_s, 16 * opt.sleep_s);
    } else {
      helper_sleep_s = opt.sleep_s;
      if (opt.policy == WaitPolicy::backoff && tests > opt.spin_tests) sleep_for_s(opt.sleep_s);
    }
    // Checking the clock (and for queries) every test would cost more than the test itself
    // when spinning.
    if ((tests & 63) == 0) {
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      answer_stall_queries([&] { return fmt::format("{} (for {:.1f} s)", what(), waited); });
      if (opt.timeout_s > 0 && waited > opt.timeout_s) {
        note_communication_timeout();  // cleanup waits of this rank no longer wait
        const double grace_s = stall_grace_s(opt.timeout_s, waited);  // within the job's end
        const std::string w = what();
        const std::string arrival =
            ask_who_did_not_arrive(w, members ? *members : std::vector<int>{}, grace_s);
        DPLAB_FAIL(
            "rank {}: {} did not complete within {:.0f} s (comm.timeout_s); {}",
            MpiEnv::get().world_rank(), w, opt.timeout_s,
            arrival.empty() ? "a peer rank has probably failed or stopped participating" : arrival);
      }
    }
  }
}

bool Request::test_real() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->done) return true;
  if (impl_->progress()) {
    impl_->done = true;
    impl_->completed = Clock::now();
  }
  return impl_->done;
}

bool Request::test() {
  if (!impl_) return true;
  if (!impl_->vt || !impl_->vt->clock.is_owner()) return test_real();
  if (impl_->virtual_done) return true;
  // By virtual time: the same answer whatever the load (docs/virtual_cluster.md).
  cluster::VirtualClock& clock = impl_->vt->clock;
  const double now = clock.now();
  const double end = impl_->virtual_end();
  clock.discard_cpu();  // learning the end was communication, not compute
  if (end > now) return false;
  wait();  // the real completion; the clock stays (end <= now)
  return true;
}

void Request::wait() {
  if (!impl_) return;
  // Only the rank's compute thread moves the clock (a helper thread's wait is real only).
  const bool clocked = impl_->vt && impl_->vt->clock.is_owner();
  if (clocked) impl_->owner_wait_begins(impl_->vt->clock.now());  // commits the compute
  try {
    polite_wait([this] { return test_real(); }, impl_->wait, [this] { return impl_->describe(); },
                impl_->world_members);
    if (clocked && !impl_->virtual_done) {
      impl_->vt->clock.wait_until(impl_->virtual_end());
      impl_->virtual_done = true;
    }
  } catch (const std::exception& e) {
    if (clocked) impl_->owner_wait_ends();
    impl_->on_wait_failed(e.what());
    throw;
  }
  if (clocked) impl_->owner_wait_ends();
}

double Request::virtual_end() const {
  DPLAB_CHECK(impl_ && impl_->vt, "Request::virtual_end: {} has no virtual time", describe());
  return impl_->virtual_end();
}

double Request::seconds_in_flight() const {
  if (!impl_ || !impl_->done) return 0.0;
  if (impl_->vt) return impl_->virtual_end() - impl_->virtual_post;
  return std::chrono::duration<double>(impl_->completed - impl_->posted).count();
}

void wait_all(std::vector<Request>& reqs) {
  for (auto& r : reqs) r.wait();
}

void Request::complete_before_compute() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->device_ordered()) {
      if (impl_->done) return;
      impl_->order_before_compute();
      // Done for the program: everything after this sees the result. `completed` is when it
      // was handed to the device, the only time the host knows without waiting.
      impl_->done = true;
      impl_->completed = Clock::now();
      return;
    }
  }
  // A host request: waited for. Also when done already (another thread's test() completed it,
  // as DC-S3GD's progress thread does): wait() then returns at once, but still moves a virtual
  // clock to the operation's end, which is where the exposed wait comes from.
  wait();
}

void complete_all_before_compute(std::vector<Request>& reqs) {
  for (auto& r : reqs) r.complete_before_compute();
}

}  // namespace dplab
