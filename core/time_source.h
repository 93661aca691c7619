// TimeSource: where a run's time figures come from (issue #20, docs/virtual_cluster.md "One time
// base"). Without a virtual cluster it is the wall clock; with one it is the rank's virtual
// clock, so every figure dplab reports (metrics, trace timestamps, exposed wait, in flight, the
// algorithms' own timers such as Oscars' step times) is on one time base and a study's times do
// not depend on how loaded the host is. Code that measures a duration reads now() twice; code
// that must stay in real time (liveness timeouts, a progress bar's redraw throttle) keeps
// std::chrono::steady_clock.
#pragma once
#include <chrono>

namespace dplab {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // Seconds since this source's zero (the wall clock: when it was built; a virtual clock: 0 at
  // the world communicator's creation, the same instant on every rank).
  virtual double now() = 0;
  // True for a virtual clock: the figures it gives are modelled time, not elapsed time.
  virtual bool is_virtual() const = 0;
};

// The wall clock (steady_clock), zero when built.
class WallTime final : public TimeSource {
 public:
  WallTime() : origin_(std::chrono::steady_clock::now()) {}
  double now() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
  }
  bool is_virtual() const override { return false; }

 private:
  std::chrono::steady_clock::time_point origin_;
};

}  // namespace dplab
