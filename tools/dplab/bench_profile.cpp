#include "dplab/tools/dplab/bench_profile.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "dplab/core/autograd.h"
#include "dplab/core/ops/loss.h"
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

}  // namespace

cluster::ComputeProfile profile_train_steps(Module& model, ParamArena& arena, Optimizer& opt,
                                            const Tensor& x, const Tensor& y, int64_t steps,
                                            const std::function<void()>& sync) {
  const size_t nseg = arena.segments().size();
  // Shared with the hooks, which stay registered on the parameters after this returns: they
  // record only while `recording` is set.
  struct Marks {
    bool recording = false;
    ProfileClock::time_point backward_start;
    std::vector<double> ready_s;
  };
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
  // The training driver's per-step check of the loss and the gradients, as train_loop runs it
  // between backward and the optimizer (with the gradients: the f16 loss scaler's runs check
  // the loss only, and their profile charges a little more than they pay).
  NonfiniteGuard guard(arena, true);
  std::vector<double> fwd, bwd, chk, upd;
  std::vector<std::vector<double>> frac(nseg);
  for (int64_t i = 0; i < steps; ++i) {
    sync();
    const auto t0 = ProfileClock::now();
    opt.zero_grad();
    Tensor loss = cross_entropy(model.forward(x), y);
    sync();
    const auto t1 = ProfileClock::now();
    marks->ready_s.assign(nseg, -1.0);
    marks->backward_start = t1;
    marks->recording = true;
    backward(loss);
    sync();
    const auto t2 = ProfileClock::now();
    marks->recording = false;
    DPLAB_CHECK(!guard.step_nonfinite(loss), "bench --profile-out: step {}: {} is not finite", i,
                guard.describe(loss));
    sync();
    const auto t3 = ProfileClock::now();
    opt.step();
    sync();
    const auto t4 = ProfileClock::now();
    fwd.push_back(seconds(t0, t1));
    bwd.push_back(seconds(t1, t2));
    chk.push_back(seconds(t2, t3));
    upd.push_back(seconds(t3, t4));
    const double b = seconds(t1, t2);
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
  for (size_t s = 0; s < nseg; ++s)
    p.segments.push_back({arena.segments()[s].name, arena.segments()[s].numel, median(frac[s])});
  return p;
}

}  // namespace dplab::cli
