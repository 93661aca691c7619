// Batch normalisation over the blocked nChw16c layout (Layout::nChw16c): the cpu backend's
// norm kernels hand blocked inputs here. Same contract as NormKernels (core/kernels/norm.h);
// x, y, dy and dx are all nChw16c, the per-channel vectors are plain [C]. relu: fused with the
// ReLU after it (forward clamps y; backward masks dy by the forward's output y, which is
// undefined otherwise). residual (defined: y = relu(bn(x) + residual), relu implied) and
// dresidual (non-null and defined: receives the masked dy) fuse a ResNet block's residual add.
// Activations are f32 or bf16, all of one dtype.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

void blocked_bn_forward_train(const Tensor& x, const Tensor& residual, const Tensor& weight,
                              const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                              float momentum, float eps, Tensor& y, Tensor& save_mean,
                              Tensor& save_invstd, bool relu);
void blocked_bn_forward_eval(const Tensor& x, const Tensor& residual, const Tensor& weight,
                             const Tensor& bias, const Tensor& running_mean,
                             const Tensor& running_var, float eps, Tensor& y, bool relu);
void blocked_bn_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                         const Tensor& mean, const Tensor& invstd, bool training, Tensor& dx,
                         Tensor* dresidual, Tensor& dweight, Tensor& dbias);

}  // namespace dplab
