// The compute phases of a training step and what watches them. The step (train_loop.cpp) runs
// comm/strategy.h's protocol and says where each phase begins and ends; whatever times or
// records compute attaches here as an observer instead of being called from the step: the
// virtual cluster's clock (train/virtual/virtual_run.h), --slowdown's compute timer and the
// trace's forward, backward and optimizer spans (step_observers.h), and the compute-profile
// recorder's timer (tools/dplab/bench_profile.cpp).
//
//   begin(forward)  model forward, loss              end(forward)
//   begin(backward) backward: gradient hooks fire    end(backward)
//                   strategy.after_backward
//   begin(check)    the non-finite check              end(check)
//                   (the ranks' agreement: not compute)
//   begin(optimizer) the optimizer step or nothing    end(optimizer, stepped)
//                   strategy.after_step
//   step_end()      what follows is not the step's compute (records, progress, checkpoints)
#pragma once
#include <cstdint>
#include <vector>

namespace dplab {

enum class StepPhase { forward, backward, check, optimizer };

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Global step `step` begins (before its plan; a tick that computes nothing too).
  virtual void step_begin(int64_t step) {}
  virtual void begin(StepPhase phase) {}
  // `stepped`: for the optimizer phase, whether an update was applied (the optimizer's step or
  // the algorithm's own); false otherwise.
  virtual void end(StepPhase phase, bool stepped) {}
  virtual void step_end() {}
};

// The observers of one loop, told in the order they were added (the virtual cluster first, so
// that a phase's end has moved the clock before a span reads it).
class StepPhases {
 public:
  void add(StepObserver* o) {
    if (o) observers_.push_back(o);
  }
  void step_begin(int64_t step) const {
    for (StepObserver* o : observers_) o->step_begin(step);
  }
  void begin(StepPhase p) const {
    for (StepObserver* o : observers_) o->begin(p);
  }
  void end(StepPhase p, bool stepped = false) const {
    for (StepObserver* o : observers_) o->end(p, stepped);
  }
  void step_end() const {
    for (StepObserver* o : observers_) o->step_end();
  }

 private:
  std::vector<StepObserver*> observers_;
};

}  // namespace dplab
