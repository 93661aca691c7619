#include "dplab/tools/dplab/bench_profile.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "dplab/core/error.h"
#include "dplab/train/loop/nonfinite_guard.h"

namespace dplab::cli {

namespace {

using ProfileClock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds(ProfileClock::time_point a, ProfileClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The phases forward_backward reports, timed with the device synchronised at each boundary;
// the grad-ready hooks record while backward runs.
struct Marks {
  bool recording = false;
  ProfileClock::time_point backward_start;
  std::vector<double> ready_s;
};

class PhaseTimer : public StepObserver {
 public:
  PhaseTimer(std::shared_ptr<Marks> marks, std::function<void()> sync)
      : marks_(std::move(marks)), sync_(std::move(sync)) {}
  void begin(StepPhase phase) override {
    sync_();
    const auto now = ProfileClock::now();
    if (phase == StepPhase::forward) forward_start = now;
    if (phase == StepPhase::backward) {
      backward_start = now;
      marks_->ready_s.assign(marks_->ready_s.size(), -1.0);
      marks_->backward_start = now;
      marks_->recording = true;
    }
  }
  void end(StepPhase phase, bool) override {
    sync_();
    if (phase == StepPhase::backward) {
      backward_end = ProfileClock::now();
      marks_->recording = false;
    }
  }
  ProfileClock::time_point forward_start, backward_start, backward_end;

 private:
  std::shared_ptr<Marks> marks_;
  std::function<void()> sync_;
};

}  // namespace

cluster::ComputeProfile profile_train_steps(Module& model, ParamArena& arena, Optimizer& opt,
                                            const Tensor& x, const Tensor& y, const StepLoss& how,
                                            int64_t steps, const std::function<void()>& sync) {
  const size_t nseg = arena.segments().size();
  // Shared with the hooks, which stay registered on the parameters after this returns: they
  // record only while `recording` is set.
  auto marks = std::make_shared<Marks>();
  marks->ready_s.assign(nseg, -1.0);
  std::weak_ptr<Marks> weak = marks;
  for (size_t s = 0; s < nseg; ++s)
    arena.segments()[s].param.register_grad_ready_hook([weak, s, sync](const Tensor&) {
      auto m = weak.lock();
      if (!m || !m->recording) return;
      sync();
      m->ready_s[s] = seconds(m->backward_start, ProfileClock::now());
    });
  PhaseTimer timer(marks, sync);
  StepPhases phases;
  phases.add(&timer);
  // The training driver's per-step check of the loss and the gradients, as train_loop runs it
  // between backward and the optimizer (with the gradients: the f16 loss scaler's runs check
  // the loss only, and their profile charges a little more than they pay).
  NonfiniteGuard guard(arena, true);
  std::vector<double> fwd, bwd, chk, upd;
  std::vector<std::vector<double>> frac(nseg);
  for (int64_t i = 0; i < steps; ++i) {
    opt.zero_grad();  // outside the phases, as in the training loop
    const ForwardLoss fl = forward_backward(model, x, y, how, &phases);
    DPLAB_CHECK(!guard.step_nonfinite(fl.loss), "bench --profile-out: step {}: {} is not finite", i,
                guard.describe(fl.loss));
    sync();
    const auto t3 = ProfileClock::now();
    opt.step();
    sync();
    const auto t4 = ProfileClock::now();
    fwd.push_back(seconds(timer.forward_start, timer.backward_start));
    bwd.push_back(seconds(timer.backward_start, timer.backward_end));
    chk.push_back(seconds(timer.backward_end, t3));
    upd.push_back(seconds(t3, t4));
    const double b = seconds(timer.backward_start, timer.backward_end);
    for (size_t s = 0; s < nseg; ++s) {
      // A tensor without a gradient this step is ready when backward ends.
      const double r = marks->ready_s[s] < 0 ? b : marks->ready_s[s];
      frac[s].push_back(b > 0 ? std::clamp(r / b, 0.0, 1.0) : 1.0);
    }
  }
  cluster::ComputeProfile p;
  p.steps = steps;
  p.forward_s = median(fwd);
  p.backward_s = median(bwd);
  p.optimizer_s = median(upd);
  p.check_s = median(chk);
  std::vector<double> total(fwd.size());
  for (size_t i = 0; i < total.size(); ++i) total[i] = fwd[i] + bwd[i] + chk[i] + upd[i];
  p.step_log_sigma = cluster::step_log_sigma(total);
  for (size_t s = 0; s < nseg; ++s)
    p.segments.push_back({arena.segments()[s].name, arena.segments()[s].numel, median(frac[s])});
  return p;
}

}  // namespace dplab::cli
