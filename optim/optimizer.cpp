#include "dplab/optim/optimizer.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {

void Optimizer::step_unless(const Tensor& flags) {
  DPLAB_CHECK(flags.defined(), "{}: step_unless needs its flags tensor", name());
  update(flags);
  // A dropped step's gradients are zeroed, so no later step sees them (an accumulation group,
  // or an algorithm that keeps gradients across steps); one launch that returns at once on CUDA
  // when the step was taken.
  NoGradGuard no_grad;
  if (arena_.numel() > 0) {
    Tensor grads = arena_.grads();
    backend_for(arena_.device()).optim.zero_if_flagged(grads, flags);
  }
}

void Optimizer::uncount_step() {
  DPLAB_CHECK(steps_ > 0, "{}: uncount_step with no step counted", name());
  --steps_;
}

}  // namespace dplab
