#include "dplab/train/loop/forward_backward.h"

#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"

namespace dplab {

ForwardLoss forward_backward(Module& model, const Tensor& images, const Tensor& labels,
                             const StepLoss& how, const StepPhases* phases) {
  ForwardLoss out;
  if (phases) phases->begin(StepPhase::forward);
  {
    AutocastGuard autocast(how.amp);  // f32: off
    out.logits = model.forward(images);
  }
  out.loss = cross_entropy(out.logits, labels, how.label_smoothing);
  if (phases) {
    phases->end(StepPhase::forward);
    phases->begin(StepPhase::backward);
  }
  backward(how.weigh ? how.weigh(out.loss) : out.loss);
  if (phases) phases->end(StepPhase::backward);
  return out;
}

}  // namespace dplab
