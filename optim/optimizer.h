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
  virtual void step() = 0;
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
  ParamArena& arena_;
  double lr_ = 0.01;
  double weight_decay_ = 0.0;
  int64_t steps_ = 0;
};

}  // namespace dplab
