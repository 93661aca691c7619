// Optimizer updates written once for every backend: the ref loop, the OpenMP loop and (later)
// the CUDA kernel all call these functors per element, so the device path runs exactly the
// arithmetic the CPU tests proved. Arithmetic is f32 and in PyTorch's operation order, so a
// dplab step equals torch.optim's bit for bit on the same inputs.
#pragma once
#include "dplab/core/hostdevice.h"

namespace dplab {

// torch.optim.SGD for one element:
//   g = grad + weight_decay * p
//   buf = g (first step)  |  buf = momentum * buf + (1 - dampening) * g
//   d = g + momentum * buf (Nesterov)  |  d = buf  |  d = g (momentum == 0)
//   p = p - lr * d
// weight_decay is already masked by the caller (0 for tensors excluded from decay).
struct SgdUpdate {
  float lr;
  float momentum;
  float one_minus_dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer is initialised to g instead of updated

  // buf is ignored (may be null) when momentum == 0.
  DPLAB_HD void operator()(float* p, float grad, float* buf) const {
    float g = grad;
    if (weight_decay != 0.f) g = g + weight_decay * *p;
    if (momentum != 0.f) {
      float b;
      if (first_step) {
        b = g;
      } else {
        b = *buf * momentum;
        b = b + one_minus_dampening * g;
      }
      *buf = b;
      g = nesterov ? g + momentum * b : b;
    }
    *p = *p + (-lr) * g;
  }
};

}  // namespace dplab
