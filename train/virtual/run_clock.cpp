#include "dplab/train/virtual/run_clock.h"

namespace dplab {
namespace {

// The wall clock as a TimeSource with the run's zero, for the algorithms when no cluster is given.
class WallFrom final : public TimeSource {
 public:
  explicit WallFrom(RunClock::Wall::time_point zero) : zero_(zero) {}
  double now() override {
    return std::chrono::duration<double>(RunClock::Wall::now() - zero_).count();
  }
  bool is_virtual() const override { return false; }

 private:
  RunClock::Wall::time_point zero_;
};

}  // namespace

RunClock::RunClock(Wall::time_point wall_zero) : wall_zero_(wall_zero) {}

RunClock::RunClock(std::shared_ptr<TimeSource> time, std::string time_base,
                   Wall::time_point wall_zero)
    : time_(std::move(time)), base_(std::move(time_base)), wall_zero_(wall_zero) {}

RunClock::Mark RunClock::now() const {
  const double wall = std::chrono::duration<double>(Wall::now() - wall_zero_).count();
  return {time_ ? time_->now() : wall, wall};
}

std::shared_ptr<TimeSource> RunClock::source() const {
  if (time_) return time_;
  return std::make_shared<WallFrom>(wall_zero_);
}

}  // namespace dplab
