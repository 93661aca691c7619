#include "dplab/train/loop/step_observers.h"

namespace dplab {

void TraceSpans::begin(StepPhase phase) {
  switch (phase) {
    case StepPhase::forward:
      span_.emplace(tracer_, "forward", "compute", trace::kCompute, true);
      break;
    case StepPhase::backward:
      span_.emplace(tracer_, "backward", "compute", trace::kCompute, true);
      break;
    case StepPhase::optimizer:
      span_.emplace(tracer_, "optimizer", "compute", trace::kCompute, true);
      break;
    case StepPhase::check:
      break;
  }
}

void TraceSpans::end(StepPhase phase, bool) {
  if (phase != StepPhase::check) span_.reset();  // the span ends (its destructor)
}

void SlowdownTimer::begin(StepPhase phase) {
  if (phase == StepPhase::forward || phase == StepPhase::optimizer) slowdown_.start();
}

void SlowdownTimer::end(StepPhase phase, bool) {
  if (phase == StepPhase::backward) slowdown_.stop();
  if (phase == StepPhase::optimizer) slowdown_.pause();
}

void BatchPrefetch::end(StepPhase phase, bool) {
  if (phase != StepPhase::backward || !batches_.prefetch_due()) return;
  trace::Span span(tracer_, "data_wait", "data");
  log_.count_data_wait([&] { batches_.prefetch(); });
}

}  // namespace dplab
