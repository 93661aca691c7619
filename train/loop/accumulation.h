// Gradient accumulation (option accumulate_steps = k): gradients of k consecutive batches are
// summed before one optimizer step, each batch's mean loss scaled by 1/k, so k batches of B
// give the gradient of one batch of kB (exactly, for a network without BatchNorm; with BN the
// statistics are per micro-batch). Grouping follows the global iteration count, so a resumed
// run groups as an uninterrupted one; the lr schedule still advances per batch.
#pragma once
#include <cstdint>

#include "dplab/core/error.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

class GradAccumulation {
 public:
  explicit GradAccumulation(int64_t steps) : k_(steps) {
    DPLAB_CHECK_OPTION(steps >= 1, "option accumulate_steps: expected >= 1, got {}", steps);
  }
  int64_t steps() const { return k_; }
  // Whether iteration `it` (0-based) starts a group (zero the gradients) / ends one (step).
  bool first(int64_t it) const { return it % k_ == 0; }
  bool last(int64_t it) const { return (it + 1) % k_ == 0; }
  // The loss to differentiate: loss / k.
  Tensor scale(const Tensor& loss) const {
    return k_ == 1 ? loss : mul_scalar(loss, 1.f / static_cast<float>(k_));
  }

 private:
  int64_t k_;
};

}  // namespace dplab
