#include "dplab/optim/schedule.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/ranges.h>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

bool PlateauDetector::observe(double metric) {
  DPLAB_CHECK(std::isfinite(metric), "PlateauDetector: metric is {}", metric);
  if (!have_best_ || metric < best_ - std::fabs(best_) * threshold_) {
    best_ = metric;
    have_best_ = true;
    bad_ = 0;
    return false;
  }
  if (++bad_ >= patience_) {
    bad_ = 0;
    return true;
  }
  return false;
}

void PlateauDetector::save_state(StateDict& out) const {
  out.put_double("best", best_);
  out.put_bool("has_best", have_best_);
  out.put_int("bad_epochs", bad_);
}

void PlateauDetector::load_state(const StateDict& in) {
  const double best = in.get_double("best");
  const bool has_best = in.get_bool("has_best");
  const int64_t bad = in.get_int("bad_epochs");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(!has_best || std::isfinite(best),
              "{}: plateau detector state 'best' = {}: expected a finite number", where, best);
  // observe() resets the count when it reaches patience, so a saved count is below it.
  DPLAB_CHECK(bad >= 0 && bad < std::max(patience_, 1),
              "{}: plateau detector state 'bad_epochs' = {}: expected a value in [0, {})", where,
              bad, std::max(patience_, 1));
  restore(best, has_best, static_cast<int>(bad));
}

namespace {

int64_t epoch_of(int64_t step, int64_t spe) {
  DPLAB_CHECK(spe > 0, "lr schedule: steps_per_epoch must be > 0, got {}", spe);
  DPLAB_CHECK(step >= 0, "lr schedule: step must be >= 0, got {}", step);
  return step / spe;
}

// Fractional epochs, clamped to [0, total].
double progress(int64_t step, int64_t spe, double total) {
  epoch_of(step, spe);  // validates
  return std::min(static_cast<double>(step) / static_cast<double>(spe), total);
}

class ConstantSchedule : public LrSchedule {
 public:
  double factor(int64_t step, int64_t spe) const override {
    epoch_of(step, spe);
    return 1.0;
  }
  std::string describe() const override { return "constant"; }
};

class StepSchedule : public LrSchedule {
 public:
  StepSchedule(int64_t step_size, double gamma) : step_size_(step_size), gamma_(gamma) {}
  double factor(int64_t step, int64_t spe) const override {
    return std::pow(gamma_, static_cast<double>(epoch_of(step, spe) / step_size_));
  }
  std::string describe() const override {
    return fmt::format("step(step_size={}, gamma={})", step_size_, gamma_);
  }

 private:
  int64_t step_size_;
  double gamma_;
};

class MultiStepSchedule : public LrSchedule {
 public:
  MultiStepSchedule(std::vector<int64_t> milestones, double gamma)
      : milestones_(std::move(milestones)), gamma_(gamma) {}
  double factor(int64_t step, int64_t spe) const override {
    const int64_t e = epoch_of(step, spe);
    const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), e) -
                        milestones_.begin();  // milestones m <= e
    return std::pow(gamma_, static_cast<double>(passed));
  }
  std::string describe() const override {
    return fmt::format("multistep(milestones={}, gamma={})", fmt::join(milestones_, ","), gamma_);
  }

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

class PolySchedule : public LrSchedule {
 public:
  PolySchedule(double total, double power, double min_factor)
      : total_(total), power_(power), min_(min_factor) {}
  double factor(int64_t step, int64_t spe) const override {
    const double t = progress(step, spe, total_);
    return min_ + (1.0 - min_) * std::pow(1.0 - t / total_, power_);
  }
  std::string describe() const override {
    return fmt::format("poly(total_epochs={}, power={}, min_factor={})", total_, power_, min_);
  }
  std::string planned_from_epochs() const override {
    return "the learning-rate schedule (lr.schedule = poly: it ends at the last epoch)";
  }

 private:
  double total_, power_, min_;
};

class CosineSchedule : public LrSchedule {
 public:
  CosineSchedule(double total, double min_factor) : total_(total), min_(min_factor) {}
  double factor(int64_t step, int64_t spe) const override {
    const double t = progress(step, spe, total_);
    return min_ + (1.0 - min_) * 0.5 * (1.0 + std::cos(M_PI * t / total_));
  }
  std::string describe() const override {
    return fmt::format("cosine(total_epochs={}, min_factor={})", total_, min_);
  }
  std::string planned_from_epochs() const override {
    return "the learning-rate schedule (lr.schedule = cosine: it ends at the last epoch)";
  }

 private:
  double total_, min_;
};

// ReduceLROnPlateau: PyTorch reduces once the bad-epoch count exceeds `patience`, i.e. on the
// (patience + 1)-th bad epoch, which is a PlateauDetector with patience + 1.
class PlateauSchedule : public LrSchedule {
 public:
  PlateauSchedule(int patience, double factor, double threshold, bool maximize, double min_factor)
      : det_(threshold, patience + 1),
        patience_(patience),
        reduce_(factor),
        threshold_(threshold),
        maximize_(maximize),
        min_(min_factor) {}
  double factor(int64_t step, int64_t spe) const override {
    epoch_of(step, spe);
    return current_;
  }
  void observe_epoch(double metric) override {
    if (det_.observe(maximize_ ? -metric : metric)) current_ = std::max(current_ * reduce_, min_);
  }
  std::string describe() const override {
    return fmt::format("plateau(patience={}, factor={}, threshold={}, mode={}, min_factor={})",
                       patience_, reduce_, threshold_, maximize_ ? "max" : "min", min_);
  }
  std::map<std::string, double> state() const override {
    return {{"plateau.factor", current_},
            {"plateau.best", det_.best()},
            {"plateau.has_best", det_.has_best() ? 1.0 : 0.0},
            {"plateau.bad_epochs", static_cast<double>(det_.bad_epochs())}};
  }
  void load_state(const std::map<std::string, double>& st) override {
    auto get = [&](const char* key) {
      auto it = st.find(key);
      DPLAB_CHECK(it != st.end(), "plateau schedule: missing state '{}'", key);
      return it->second;
    };
    current_ = get("plateau.factor");
    det_.restore(get("plateau.best"), get("plateau.has_best") != 0.0,
                 static_cast<int>(get("plateau.bad_epochs")));
  }

 private:
  PlateauDetector det_;
  int patience_;
  double reduce_, threshold_;
  bool maximize_;
  double min_;
  double current_ = 1.0;
};

// Linear warm-up per step in front of any schedule (multiplicative).
class WarmupSchedule : public LrSchedule {
 public:
  WarmupSchedule(std::unique_ptr<LrSchedule> inner, double warmup_epochs, double start)
      : inner_(std::move(inner)), epochs_(warmup_epochs), start_(start) {}
  double factor(int64_t step, int64_t spe) const override {
    const double f = inner_->factor(step, spe);
    const double w = epochs_ * static_cast<double>(spe);
    const double s = static_cast<double>(step);
    if (s >= w) return f;
    return f * (start_ + (1.0 - start_) * s / w);
  }
  void observe_epoch(double metric) override { inner_->observe_epoch(metric); }
  std::string describe() const override {
    return fmt::format("warmup(epochs={}, start_factor={}) + {}", epochs_, start_,
                       inner_->describe());
  }
  std::map<std::string, double> state() const override { return inner_->state(); }
  void load_state(const std::map<std::string, double>& st) override { inner_->load_state(st); }
  std::string planned_from_epochs() const override { return inner_->planned_from_epochs(); }

 private:
  std::unique_ptr<LrSchedule> inner_;
  double epochs_, start_;
};

std::vector<int64_t> parse_milestones(const std::string& key, const std::string& s) {
  std::vector<int64_t> r;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    int64_t v = 0;
    auto res = std::from_chars(item.data(), item.data() + item.size(), v);
    DPLAB_CHECK_OPTION(
        !item.empty() && res.ec == std::errc() && res.ptr == item.data() + item.size() && v >= 0,
        "option {}: expected comma-separated epochs like \"30,60,80\", got '{}'", key, s);
    r.push_back(v);
    pos = end + 1;
  }
  DPLAB_CHECK_OPTION(std::is_sorted(r.begin(), r.end()),
                     "option {}: milestones must increase, got '{}'", key, s);
  return r;
}

}  // namespace

std::unique_ptr<LrSchedule> make_lr_schedule(const Options& opt, int64_t total_epochs) {
  return with_warmup(make_base_lr_schedule(opt, total_epochs), opt);
}

const OptionTable& lr_schedule_option_table() {
  static const OptionTable t({
      // Its value names a registry entry (train/config/registry.h): the driver checks it there.
      {"lr.schedule", "constant",
       "learning-rate schedule: constant, step, multistep, poly, cosine or plateau "
       "(optim/schedule.h)",
       text()},
      {"lr.warmup_epochs", "0", "linear warm-up over this many epochs (fractional allowed)",
       number(0)},
      {"lr.warmup_start_factor", "0", "lr factor at the start of the warm-up", number(0, 1)},
      {"lr.step_size", "30", "step: epochs between decays", integer(1)},
      {"lr.gamma", "0.1", "step and multistep: decay factor", number()},
      {"lr.milestones", "30,60,80", "multistep: epochs at which the lr decays by lr.gamma", text()},
      // > 0: said by the reader (a rule's bounds are inclusive).
      {"lr.power", "2", "poly: factor (1 - t/T)^power", number(0)},
      {"lr.min_factor", "0", "cosine, poly and plateau: floor of the lr factor", number(0, 1)},
      {"lr.patience", "10",
       "plateau: epochs without improvement of the world's mean training loss before a decay",
       integer(0)},
      // in (0, 1): 0 is refused by the reader.
      {"lr.factor", "0.1", "plateau: decay factor", number(0, 1, true)},
      {"lr.threshold", "0.0001", "plateau: relative improvement that counts", number(0)},
      {"lr.mode", "min", "plateau: min (the epoch loss) or max", choice({"min", "max"})},
  });
  return t;
}

std::unique_ptr<LrSchedule> make_base_lr_schedule(const Options& opt, int64_t total_epochs) {
  const OptionTable& t = lr_schedule_option_table();
  const std::string kind = t.get_string(opt, "lr.schedule");
  std::unique_ptr<LrSchedule> s;
  auto need_total = [&]() {
    DPLAB_CHECK(total_epochs > 0, "lr.schedule = {} needs the total number of epochs (got {})",
                kind, total_epochs);
    return static_cast<double>(total_epochs);
  };
  auto min_factor = [&]() { return t.get_double(opt, "lr.min_factor"); };
  if (kind == "constant") {
    s = std::make_unique<ConstantSchedule>();
  } else if (kind == "step") {
    const int64_t step_size = t.get_int(opt, "lr.step_size");
    s = std::make_unique<StepSchedule>(step_size, t.get_double(opt, "lr.gamma"));
  } else if (kind == "multistep") {
    s = std::make_unique<MultiStepSchedule>(
        parse_milestones("lr.milestones", t.get_string(opt, "lr.milestones")),
        t.get_double(opt, "lr.gamma"));
  } else if (kind == "poly") {
    const double power = t.get_double(opt, "lr.power");
    DPLAB_CHECK_OPTION(power > 0, "option lr.power: expected a number > 0, got {}", power);
    s = std::make_unique<PolySchedule>(need_total(), power, min_factor());
  } else if (kind == "cosine") {
    s = std::make_unique<CosineSchedule>(need_total(), min_factor());
  } else if (kind == "plateau") {
    const int64_t patience = t.get_int(opt, "lr.patience");
    const double factor = t.get_double(opt, "lr.factor");
    DPLAB_CHECK_OPTION(factor > 0, "option lr.factor: expected a number in (0, 1), got {}", factor);
    const double threshold = t.get_double(opt, "lr.threshold");
    const std::string mode = t.get_string(opt, "lr.mode");
    s = std::make_unique<PlateauSchedule>(static_cast<int>(patience), factor, threshold,
                                          mode == "max", min_factor());
  } else {
    DPLAB_FAIL_OPTION(
        "option lr.schedule: unknown value '{}'; expected constant, step, multistep, poly, "
        "cosine or plateau",
        kind);
  }
  return s;
}

std::unique_ptr<LrSchedule> with_warmup(std::unique_ptr<LrSchedule> s, const Options& opt) {
  DPLAB_CHECK(s != nullptr, "with_warmup: no schedule to wrap");
  const OptionTable& t = lr_schedule_option_table();
  const double warmup = t.get_double(opt, "lr.warmup_epochs");
  if (warmup > 0) {
    const double start = t.get_double(opt, "lr.warmup_start_factor");
    s = std::make_unique<WarmupSchedule>(std::move(s), warmup, start);
  }
  return s;
}

}  // namespace dplab
