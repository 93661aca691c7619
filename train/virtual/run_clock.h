// The training driver's time base (issue #20, docs/virtual_cluster.md "One time base"): every
// time figure the driver reports (step and epoch records, elapsed_s, the progress line's rate,
// the final record, the result's time) is read here. Without a virtual cluster it is the wall
// clock, as it always was; with one, the rank's virtual clock, and the wall clock is read beside
// it so that the records keep `wall_s` next to each virtual figure.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "dplab/core/time_source.h"

namespace dplab {

class RunClock {
 public:
  using Wall = std::chrono::steady_clock;
  // A reading: `t` seconds on the time base, `wall` wall seconds (both since their zeros).
  struct Mark {
    double t = 0, wall = 0;
    Mark operator-(const Mark& o) const { return {t - o.t, wall - o.wall}; }
    Mark operator+(const Mark& o) const { return {t + o.t, wall + o.wall}; }
  };
  // The wall clock alone (t == wall), zero at `wall_zero`.
  explicit RunClock(Wall::time_point wall_zero = Wall::now());
  // `time` (null: the wall clock) with its name for the records: "wall" or "virtual:<platform>".
  RunClock(std::shared_ptr<TimeSource> time, std::string time_base, Wall::time_point wall_zero);

  Mark now() const;
  // Seconds on the time base since `m` (one reading).
  double since(const Mark& m) const { return now().t - m.t; }
  bool is_virtual() const { return time_ != nullptr && time_->is_virtual(); }
  // "wall" or "virtual:<platform>": what the records' time figures are.
  const std::string& time_base() const { return base_; }
  // The source handed to the algorithms (TrainContext::time) and the tracer.
  std::shared_ptr<TimeSource> source() const;

 private:
  std::shared_ptr<TimeSource> time_;  // null: the wall clock
  std::string base_ = "wall";
  Wall::time_point wall_zero_;
};

}  // namespace dplab
