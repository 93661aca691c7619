// Launchers of dplab's own batch-norm kernels (norm_kernels.cu), for the cases core/cuda/norm.cpp
// does not hand to cuDNN. Tensors are contiguous f32 [N, C, HW]; optional pointers may be null.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dplab::cuda {

// p[0, n) = value (the ones/zeros standing in for an absent weight, bias or running stat).
cudaError_t launch_bn_fill(float* p, int64_t n, float value, cudaStream_t s);

// Training forward when N*HW == 1 (one value per channel): mean = x, biased variance 0 and,
// as in the reference, the running variance takes that 0 (M/(M-1) is undefined).
cudaError_t launch_bn_train_single(const float* x, const float* w, const float* b,
                                   float* running_mean, float* running_var, float momentum,
                                   float eps, float* y, float* save_mean, float* save_invstd,
                                   int64_t C, cudaStream_t s);

// Backward with given (mean, invstd), one block per channel, in the reference's arithmetic:
// dweight = sum dy*xhat, dbias = sum dy (double sums) and dx with (training) or without the
// batch-statistics terms. Any of dx, dweight, dbias may be null.
cudaError_t launch_bn_backward(const float* dy, const float* x, const float* w, const float* mean,
                               const float* invstd, bool training, int64_t N, int64_t C, int64_t HW,
                               float* dx, float* dweight, float* dbias, cudaStream_t s);

}  // namespace dplab::cuda
