// A step's forward, loss and backward: one definition for the training loop, `dplab bench
// train` and the compute-profile recorder, so that a profile times the step that is trained
// (its autocast and loss included).
#pragma once
#include <functional>

#include "dplab/core/dtype.h"
#include "dplab/core/tensor.h"
#include "dplab/layers/module.h"
#include "dplab/train/loop/step_phases.h"

namespace dplab {

struct StepLoss {
  DType amp = DType::f32;     // the forward under autocast at this dtype (f32: off)
  float label_smoothing = 0;  // cross-entropy's (PyTorch's rule)
  // The loss as backward takes it (the loop: 1/accumulation, a failure's weight, the f16 loss
  // scale); empty: the loss as it is.
  std::function<Tensor(const Tensor&)> weigh;
};

struct ForwardLoss {
  Tensor logits;
  Tensor loss;  // f32 scalar, unweighted
};

// forward under autocast -> cross-entropy in f32 -> backward of how.weigh(loss); `phases` (may
// be null) is told where forward and backward begin and end.
ForwardLoss forward_backward(Module& model, const Tensor& images, const Tensor& labels,
                             const StepLoss& how, const StepPhases* phases = nullptr);

}  // namespace dplab
