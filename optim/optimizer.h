// Optimizer over a ParamArena: updates work on the flat parameter/gradient buffers (per
// segment, for per-tensor weight-decay masks and LARS norms), so the CPU and CUDA paths are
// one fused loop/kernel over contiguous memory.
#pragma once
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"

namespace dplab {

class Optimizer {
 public:
  explicit Optimizer(ParamArena& arena) : arena_(arena) {}
  virtual ~Optimizer() = default;
  // One update of the whole arena from its gradients; counts the step.
  void step() { update(Tensor()); }
  // step(), unless one of `flags` (a small f32 tensor on the arena's device) is non-zero: then
  // parameters and optimizer state stay as they are and the gradients are zeroed. Decided on the
  // device (core/kernels/optim.h, skip_if), so the host need not read the flags first (issue #34:
  // nonfinite = skip with nonfinite_check = next_step). The step is counted either way: when the
  // host learns later that it was dropped, uncount_step() takes it back, before the next step.
  void step_unless(const Tensor& flags);
  // Takes back the count of the last step, which step_unless() dropped (its flags were set).
  void uncount_step();
  virtual std::string name() const = 0;
  void zero_grad() { arena_.zero_grad(); }
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  double weight_decay() const { return weight_decay_; }
  void set_weight_decay(double wd) { weight_decay_ = wd; }
  int64_t steps() const { return steps_; }
  ParamArena& arena() { return arena_; }
  // Optimizer state for checkpoints (e.g. "optim.momentum_buffer" as one flat tensor plus
  // "optim.steps"); load_state restores it exactly, so a resumed run equals an uninterrupted one.
  virtual std::vector<NamedTensor> state() const = 0;
  virtual void load_state(const std::vector<NamedTensor>& state) = 0;

 protected:
  // The update of step(), skipped on the device when one of skip_if is non-zero (undefined:
  // never); increments steps_.
  virtual void update(const Tensor& skip_if) = 0;
  ParamArena& arena_;
  double lr_ = 0.01;
  double weight_decay_ = 0.0;
  int64_t steps_ = 0;
};

}  // namespace dplab
