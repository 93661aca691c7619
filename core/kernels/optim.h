// Optimizer kernels: fused element-wise updates over a contiguous flat range of a ParamArena
// (one call per arena segment, so per-tensor flags such as the weight-decay mask are honoured
// without masks in memory). Every implementation calls the functors of core/optim_functors.h.
#pragma once
#include "dplab/core/optim_functors.h"
#include "dplab/core/tensor.h"

namespace dplab {

struct SgdStepArgs {
  float lr = 0.01f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;  // already masked: 0 for segments excluded from weight decay
  bool nesterov = false;
  bool first_step = false;  // momentum buffer is set to g rather than updated (PyTorch)
};

struct OptimKernels {
  // One SGD step in place on param (and buf when momentum != 0). param, grad and buf are
  // contiguous f32 tensors with the same number of elements on the same device; buf may be
  // undefined when momentum == 0.
  void (*sgd_step)(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args);
};

OptimKernels ref_optim_kernels();
OptimKernels cpu_optim_kernels();
OptimKernels cuda_optim_kernels();

// Validates the operands of sgd_step (every backend calls it first; core/cpu/ref/optim.cpp).
void check_sgd_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                        const SgdStepArgs& args);

inline SgdUpdate make_sgd_update(const SgdStepArgs& a) {
  return SgdUpdate{a.lr, a.momentum, 1.f - a.dampening, a.weight_decay, a.nesterov, a.first_step};
}

}  // namespace dplab
