// Launchers of dplab's own batch-norm kernels (norm_kernels.cu), for the cases core/cuda/norm.cpp
// does not hand to cuDNN. Activations are contiguous [N, C, HW]; parameters and statistics f32;
// optional pointers may be null.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/dtype.h"
#include "dplab/core/functors.h"

namespace dplab::cuda {

// p[0, n) = value (the ones/zeros standing in for an absent weight, bias or running stat).
cudaError_t launch_bn_fill(float* p, int64_t n, float value, cudaStream_t s);

// Training forward when N*HW == 1 (one value per channel): mean = x, biased variance 0 and,
// as in the reference, the running variance takes that 0 (M/(M-1) is undefined).
cudaError_t launch_bn_train_single(const float* x, const float* w, const float* b,
                                   float* running_mean, float* running_var, float momentum,
                                   float eps, float* y, float* save_mean, float* save_invstd,
                                   int64_t C, cudaStream_t s);

// What follows batch norm in the same pass (core/kernels/norm.h's fused kernels).
enum class BnTail : int { none = 0, relu = 1, add_relu = 2 };

// Batch norm forward on [N, C, HW] contiguous activations of any float dtype, one block per
// channel: training computes the batch statistics (saved, and the running ones updated when
// given), eval reads the running ones; then y = bn(x), with ReLU or relu(bn(x) + r) as the tail
// says, each output computed in f32 and rounded once into yt.
struct BnForward {
  const void* x = nullptr;
  DType xt = DType::f32;
  const void* r = nullptr;  // the residual (tail add_relu), dtype rt
  DType rt = DType::f32;
  void* y = nullptr;
  DType yt = DType::f32;
  const float* weight = nullptr;  // null: ones
  const float* bias = nullptr;    // null: zeros
  float* running_mean = nullptr;  // training: updated when not null; eval: read
  float* running_var = nullptr;
  float momentum = 0.0f, eps = 0.0f;
  float* save_mean = nullptr;  // training only
  float* save_invstd = nullptr;
  int64_t n = 0, c = 0, hw = 0;
  bool training = true;
  BnTail tail = BnTail::none;
};
cudaError_t launch_bn_forward(const BnForward& a, cudaStream_t s);

// Backward with given (mean, invstd), one block per channel, in the reference's arithmetic:
// g = dy, masked where y <= 0 when y (the forward's output after a ReLU tail) is given;
// dresidual = g; dweight = sum g*xhat, dbias = sum g (double sums); dx with (training) or
// without the batch-statistics terms. Activations of any float dtype; any of dx, dresidual,
// dweight, dbias may be null.
struct BnBackward {
  const void* dy = nullptr;
  DType dyt = DType::f32;
  const void* x = nullptr;
  DType xt = DType::f32;
  const void* y = nullptr;  // null: no ReLU mask
  DType yt = DType::f32;
  const float* weight = nullptr;
  const float* mean = nullptr;
  const float* invstd = nullptr;
  bool training = true;
  int64_t n = 0, c = 0, hw = 0;
  void* dx = nullptr;
  DType dxt = DType::f32;
  void* dresidual = nullptr;
  DType drt = DType::f32;
  float* dweight = nullptr;
  float* dbias = nullptr;
};
cudaError_t launch_bn_backward(const BnBackward& a, cudaStream_t s);

}  // namespace dplab::cuda
