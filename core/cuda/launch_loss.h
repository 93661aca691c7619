// Launchers of the CUDA softmax / cross-entropy family (core/kernels/loss.h); kernels in
// loss_kernels.cu. All tensors f32 (targets i64) and contiguous. A softmax works on rows of C
// elements `inner` apart: row (o, i) starts at o·C·inner + i, for o < outer and i < inner.
// Each row is handled by one warp with a fixed lane order and a fixed shuffle tree, so results
// repeat bit for bit; sums accumulate in double as in ref.
#pragma once
#include "dplab/core/cuda/launch.h"

namespace dplab::cuda {

cudaError_t launch_softmax_forward(const float* x, float* y, int64_t outer, int64_t c,
                                   int64_t inner, bool log, cudaStream_t stream);
cudaError_t launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t outer,
                                    int64_t c, int64_t inner, bool log, cudaStream_t stream);

// Rows of logits [n, c]: lse[i] = the row's log-sum-exp, *loss = mean over rows of
// cross_entropy_row (0 when n == 0). A row whose target is outside [0, c) gets a NaN lse and
// loss (no out-of-bounds read), so *loss is NaN. row_loss: n doubles of scratch.
cudaError_t launch_cross_entropy_forward(const float* logits, const int64_t* target, int64_t n,
                                         int64_t c, float smoothing, float* loss, float* lse,
                                         double* row_loss, cudaStream_t stream);
// dlogits[i, k] = cross_entropy_grad(logits[i, k], lse[i], k, target[i], c, smoothing, scale).
cudaError_t launch_cross_entropy_backward(const float* logits, const int64_t* target,
                                          const float* lse, int64_t n, int64_t c, float smoothing,
                                          float grad_scale, float* dlogits, cudaStream_t stream);

}  // namespace dplab::cuda
