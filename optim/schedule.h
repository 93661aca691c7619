// Learning-rate schedules as a function of progress, plus reduce-on-plateau. A schedule maps
// (step, steps_per_epoch) to a multiplier of the base lr, so it can be evaluated for any step
// (resume needs no schedule state except the plateau detector's).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/option_decl.h"
#include "dplab/core/options.h"
#include "dplab/core/state_dict.h"

namespace dplab {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // Multiplier of the base lr at optimizer step `step` (0-based) with `steps_per_epoch`.
  virtual double factor(int64_t step, int64_t steps_per_epoch) const = 0;
  // Called once per epoch with the epoch's metric (reduce-on-plateau uses it; others ignore).
  virtual void observe_epoch(double metric) {}
  virtual std::string describe() const = 0;
  // What the schedule plans from the run's total epochs (poly and cosine end there), named
  // with its option; empty when nothing. A resume that changes epochs is refused while it is
  // not (train/state/checkpoint.h).
  virtual std::string planned_from_epochs() const { return ""; }
  // The state a resumed run needs (only reduce-on-plateau has any), as named numbers for a
  // checkpoint's metadata; load_state restores it.
  virtual std::map<std::string, double> state() const { return {}; }
  virtual void load_state(const std::map<std::string, double>& state) {}
};

// Builds a schedule from options (keys under "lr.", declared with their defaults in
// lr_schedule_option_table()):
//   lr.schedule = constant | step | multistep | poly | cosine | plateau
//   lr.warmup_epochs, lr.warmup_start_factor       linear warm-up (any schedule)
//   lr.step_size, lr.gamma                          (step)
//   lr.milestones (epochs, "30,60,80"), lr.gamma    (multistep)
//   lr.power                                        (poly: (1 - t/T)^power)
//   lr.min_factor                                   (cosine, poly and plateau: the floor)
//   lr.patience, lr.factor, lr.threshold, lr.mode   (plateau)
// `total_epochs` bounds poly and cosine.
// Time: step / multistep / plateau change at epoch boundaries (epoch = floor(step / spe));
// poly and cosine are smooth in t = step / spe (fractional epochs) over [0, total_epochs],
// clamped at the end. Warm-up multiplies whichever schedule by a linear ramp per step, from
// warmup_start_factor at step 0 to 1 at step warmup_epochs * spe (Goyal et al.), so the main
// schedule keeps its absolute epochs (milestones 30,60,80 stay at 30,60,80).
// Plateau follows torch.optim.lr_scheduler.ReduceLROnPlateau (mode, rel threshold): the factor
// is multiplied by lr.factor after more than lr.patience epochs without improvement, floored
// at lr.min_factor.
std::unique_ptr<LrSchedule> make_lr_schedule(const Options& opt, int64_t total_epochs);
// The keys above with their defaults, ranges and help (the one place they are written).
const OptionTable& lr_schedule_option_table();

// The same schedule without the warm-up: make_lr_schedule = with_warmup(make_base_lr_schedule).
std::unique_ptr<LrSchedule> make_base_lr_schedule(const Options& opt, int64_t total_epochs);

// `s` behind the linear warm-up of options lr.warmup_epochs and lr.warmup_start_factor (see
// above), or `s` itself when lr.warmup_epochs is 0. Any schedule takes it: the training
// driver's Registry applies it to every schedule entry, an experiment's too
// (train/config/registry.h).
std::unique_ptr<LrSchedule> with_warmup(std::unique_ptr<LrSchedule> s, const Options& opt);

// A relative-threshold plateau detector on a per-epoch metric (lower is better): returns true
// when the metric failed to improve on the best by more than `threshold` (relative) for
// `patience` consecutive epochs, then resets its count. DASO uses it too. "Improve" means
// metric < best - |best| * threshold (so it also works for negative metrics); the first metric
// always sets the best.
class PlateauDetector {
 public:
  PlateauDetector(double threshold, int patience) : threshold_(threshold), patience_(patience) {}
  bool observe(double metric);
  double best() const { return best_; }
  bool has_best() const { return have_best_; }
  int bad_epochs() const { return bad_; }
  // Restores a checkpointed detector.
  void restore(double best, bool has_best, int bad_epochs) {
    best_ = best;
    have_best_ = has_best;
    bad_ = bad_epochs;
  }
  // Checkpoint state: "best", "has_best", "bad_epochs" (threshold and patience come from the
  // options). load_state checks the values (bad_epochs in [0, patience), a finite best).
  void save_state(StateDict& out) const;
  void load_state(const StateDict& in);

 private:
  double threshold_;
  int patience_;
  double best_ = 0;
  bool have_best_ = false;
  int bad_ = 0;
};

}  // namespace dplab
