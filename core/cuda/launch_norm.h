// Launchers of dplab's own batch-norm kernels (norm_kernels.cu), for the cases core/cuda/norm.cpp
// does not hand to cuDNN. Activations are contiguous [N, C, HW] or nhwc (channels_last);
// parameters and statistics f32; optional pointers may be null.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/cuda/bn_channel.h"

namespace dplab::cuda {

// p[0, n) = value (the ones/zeros standing in for an absent weight, bias or running stat).
cudaError_t launch_bn_fill(float* p, int64_t n, float value, cudaStream_t s);

// Training forward when N*HW == 1 (one value per channel): mean = x, biased variance 0 and,
// as in the reference, the running variance takes that 0 (M/(M-1) is undefined).
cudaError_t launch_bn_train_single(const float* x, const float* w, const float* b,
                                   float* running_mean, float* running_var, float momentum,
                                   float eps, float* y, float* save_mean, float* save_invstd,
                                   int64_t C, cudaStream_t s);

// Doubles of scratch the two launchers below need for C channels of m values each, NCHW or nhwc
// (the blocks' partial sums between passes); the caller allocates them on the stream's device.
int64_t bn_partials(int64_t C, int64_t m, bool channels_last);

// Batch norm forward on [N, C, HW] activations of any float dtype (BnForward,
// core/cuda/bn_channel.h): bn_blocks_per_channel(N·HW) blocks per channel; training takes three
// kernels (Σx, Σ(x − mean)², then statistics and outputs), eval one.
cudaError_t launch_bn_forward(const BnForward& a, double* partials, cudaStream_t s);

// Batch norm backward likewise (BnBackward): two kernels (the sums, then dx).
cudaError_t launch_bn_backward(const BnBackward& a, double* partials, cudaStream_t s);

}  // namespace dplab::cuda
