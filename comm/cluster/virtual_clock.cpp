#include "dplab/comm/cluster/virtual_clock.h"

#include <cerrno>
#include <cstring>

#include "dplab/core/error.h"

namespace dplab::cluster {

VirtualClock::VirtualClock(Compute mode, double compute_scale)
    : mode_(mode), scale_(compute_scale), owner_(pthread_self()) {
  DPLAB_CHECK(compute_scale > 0, "virtual clock: compute_scale must be positive, got {}",
              compute_scale);
  const int rc = pthread_getcpuclockid(pthread_self(), &cpu_clock_);
  DPLAB_CHECK(rc == 0, "virtual clock: pthread_getcpuclockid failed: {}", std::strerror(rc));
  cpu_last_ = owner_cpu_seconds();
}

double VirtualClock::owner_cpu_seconds() const {
  timespec ts{};
  DPLAB_CHECK(clock_gettime(cpu_clock_, &ts) == 0, "virtual clock: clock_gettime failed: {}",
              std::strerror(errno));
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void VirtualClock::commit_locked() {
  const double cpu = owner_cpu_seconds();
  if (mode_ == Compute::measured && counting_) t_ += (cpu - cpu_last_) * scale_ * factor_;
  cpu_last_ = cpu;
}

double VirtualClock::now() {
  std::lock_guard<std::mutex> lock(mu_);
  commit_locked();
  return t_;
}

void VirtualClock::add_compute(double dt) {
  DPLAB_CHECK(dt >= 0, "virtual clock: compute time must be >= 0, got {}", dt);
  std::lock_guard<std::mutex> lock(mu_);
  commit_locked();
  t_ += dt;
}

void VirtualClock::count_compute(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  commit_locked();  // what ran before the switch is (or is not) compute as it was
  counting_ = on;
}

void VirtualClock::set_compute_factor(double f) {
  DPLAB_CHECK(f > 0, "virtual clock: compute factor must be positive, got {}", f);
  std::lock_guard<std::mutex> lock(mu_);
  commit_locked();  // what ran before counts at the old factor
  factor_ = f;
}

bool VirtualClock::counting_compute() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counting_;
}

void VirtualClock::discard_cpu() {
  if (!is_owner()) return;
  std::lock_guard<std::mutex> lock(mu_);
  cpu_last_ = owner_cpu_seconds();
}

void VirtualClock::wait_until(double end) {
  if (!is_owner()) return;
  std::lock_guard<std::mutex> lock(mu_);
  cpu_last_ = owner_cpu_seconds();
  if (end > t_) t_ = end;
}

}  // namespace dplab::cluster
