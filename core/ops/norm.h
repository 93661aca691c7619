// Batch normalisation over (N, H, W) per channel, PyTorch semantics: in training, normalise by
// the batch statistics (biased variance) and update running_mean/running_var in place with
// `momentum` (running_var uses the unbiased variance); in eval, normalise by the running
// statistics. weight/bias may be undefined (affine=false).
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

Tensor batch_norm2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    float momentum = 0.1f, float eps = 1e-5f);
// relu(batch_norm2d(...)), in one pass each way where the backend fuses the two (cpu, ref); the
// composition elsewhere. What a ResNet's conv -> bn -> relu units call.
Tensor batch_norm2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var, bool training,
                         float momentum = 0.1f, float eps = 1e-5f);
// relu(batch_norm2d(x, ...) + residual) in one pass each way where the backend fuses them (cpu,
// ref); the composition elsewhere. residual has x's shape. What a ResNet block ends with.
Tensor batch_norm2d_add_relu(const Tensor& x, const Tensor& residual, const Tensor& weight,
                             const Tensor& bias, const Tensor& running_mean,
                             const Tensor& running_var, bool training, float momentum = 0.1f,
                             float eps = 1e-5f);

}  // namespace dplab
