// Batch-normalisation kernels, NCHW (any N, C, H, W; a [N, C] input counts as H = W = 1).
// Activations (x, y, dy, dx) are f32, or bf16 under autocast (all four of one dtype: computed in
// f32, stored rounded once), contiguous or, on the CPU, in one blocked layout; parameters,
// statistics and their gradients are always f32. Outputs preallocated by the caller. weight/bias
// may be undefined (affine = false); running_mean/running_var may be undefined (no running stats).
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct NormKernels {
  // Training: normalise by batch mean and biased variance; save mean [C] and
  // invstd = 1/sqrt(var + eps) [C] for backward; update the running stats in place:
  // running_mean = (1-m)·running_mean + m·mean, running_var = (1-m)·running_var + m·var·M/(M-1)
  // with M = N·H·W. (M = 1: the biased variance, 0, stands in for the undefined unbiased one.)
  // The cuda backend maps this onto cuDNN; core/cuda/norm.cpp says how each term corresponds.
  void (*batch_norm_forward_train)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                   Tensor& running_mean, Tensor& running_var, float momentum,
                                   float eps, Tensor& y, Tensor& save_mean, Tensor& save_invstd);
  // Eval: y = (x - running_mean) / sqrt(running_var + eps) · weight + bias.
  void (*batch_norm_forward_eval)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  const Tensor& running_mean, const Tensor& running_var, float eps,
                                  Tensor& y);
  // Backward given the statistics that normalised x (mean, invstd). training = true: they were
  // batch statistics, so dx includes their dependence on x (PyTorch's formula):
  //   dx = w·invstd/M · (M·dy − Σdy − x̂·Σ(dy·x̂));  otherwise dx = w·invstd·dy.
  // dweight = Σ dy·x̂, dbias = Σ dy. Any of dx, dweight, dbias may be undefined (not wanted).
  // eps: the forward's epsilon (cuDNN's backward takes it: cudnn_ops.h, "Same epsilon as forward
  // pass"; kernels that use invstd alone ignore it).
  void (*batch_norm_backward)(const Tensor& dy, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& invstd, float eps, bool training,
                              Tensor& dx, Tensor& dweight, Tensor& dbias);

  // Batch norm followed by ReLU in one pass (a ResNet's conv -> bn -> relu), optional: where
  // null the op runs batch norm, then relu. Forward: y = relu(batch norm of x), arguments as
  // above. Backward: dy is first masked where y <= 0 (ReLU's gradient, the ReluBackward
  // functor), then as batch_norm_backward; y is the forward's output.
  void (*batch_norm_relu_forward_train)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                        Tensor& running_mean, Tensor& running_var, float momentum,
                                        float eps, Tensor& y, Tensor& save_mean,
                                        Tensor& save_invstd) = nullptr;
  void (*batch_norm_relu_forward_eval)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                       const Tensor& running_mean, const Tensor& running_var,
                                       float eps, Tensor& y) = nullptr;
  void (*batch_norm_relu_backward)(const Tensor& dy, const Tensor& x, const Tensor& y,
                                   const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                                   float eps, bool training, Tensor& dx, Tensor& dweight,
                                   Tensor& dbias) = nullptr;

  // Batch norm, plus a residual r, then ReLU in one pass (a ResNet block's last unit,
  // y = relu(bn(x) + r)), optional: where null the op runs batch norm, then add_relu. r has x's
  // shape, dtype and layout. Backward: dz = dy masked where y <= 0 (y: the forward's output);
  // dresidual = dz; dx, dweight, dbias as batch_norm_backward of dz. Any of dx, dresidual,
  // dweight, dbias may be undefined (not wanted).
  void (*batch_norm_add_relu_forward_train)(const Tensor& x, const Tensor& r, const Tensor& weight,
                                            const Tensor& bias, Tensor& running_mean,
                                            Tensor& running_var, float momentum, float eps,
                                            Tensor& y, Tensor& save_mean,
                                            Tensor& save_invstd) = nullptr;
  void (*batch_norm_add_relu_forward_eval)(const Tensor& x, const Tensor& r, const Tensor& weight,
                                           const Tensor& bias, const Tensor& running_mean,
                                           const Tensor& running_var, float eps,
                                           Tensor& y) = nullptr;
  void (*batch_norm_add_relu_backward)(const Tensor& dy, const Tensor& x, const Tensor& y,
                                       const Tensor& weight, const Tensor& mean,
                                       const Tensor& invstd, float eps, bool training, Tensor& dx,
                                       Tensor& dresidual, Tensor& dweight, Tensor& dbias) = nullptr;
};

NormKernels ref_norm_kernels();
NormKernels cpu_norm_kernels();
NormKernels cuda_norm_kernels();

}  // namespace dplab
