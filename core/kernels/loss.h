// Softmax and cross-entropy kernels. All tensors f32 and contiguous, outputs preallocated.
// Softmax kernels work along `dim`, viewing x as [outer, C, inner].
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct LossKernels {
  // y = softmax(x) or log_softmax(x) along dim (max-subtracted).
  void (*softmax_forward)(const Tensor& x, int dim, bool log, Tensor& y);
  // From the forward output y: softmax: dx = y·(dy − Σ dy·y); log: dx = dy − exp(y)·Σ dy.
  void (*softmax_backward)(const Tensor& y, const Tensor& dy, int dim, bool log, Tensor& dx);
  // logits [N, C], target [N] i64 in [0, C): loss (shape {}) = mean over rows of
  // core/functors.h cross_entropy_row; lse [N] saves each row's log-sum-exp for backward.
  // A target outside [0, C): the CPU backends throw naming the bad index; CUDA does not wait
  // for the device to check it, and gives that row a NaN lse and loss instead (so the loss and
  // the row's gradients are NaN; nothing is read out of bounds). The training loop's non-finite
  // check names the bad target then (train/loop/nonfinite_guard.h).
  void (*cross_entropy_forward)(const Tensor& logits, const Tensor& target, float smoothing,
                                Tensor& loss, Tensor& lse);
  // dlogits = grad_scale · (softmax − smoothed target); grad_scale = upstream gradient / N.
  void (*cross_entropy_backward)(const Tensor& logits, const Tensor& target, const Tensor& lse,
                                 float smoothing, float grad_scale, Tensor& dlogits);
};

LossKernels ref_loss_kernels();
LossKernels cpu_loss_kernels();
LossKernels cuda_loss_kernels();

// Throws "<what>: target[i] = v is outside [0, C)" for the first bad target (CPU tensors).
void check_class_targets(const Tensor& target, int64_t num_classes, const char* what);

// A softmax operand viewed as [outer, C, inner] along `dim`; checks that x is a contiguous f32
// tensor and dim is in range (every backend's softmax kernels use it; core/cpu/ref/loss.cpp).
struct SoftmaxRows {
  int64_t outer, c, inner;
};
SoftmaxRows softmax_rows(const Tensor& x, int dim, const char* what);

}  // namespace dplab
