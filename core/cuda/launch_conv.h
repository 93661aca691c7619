// Launchers of the CUDA kernels beside cuDNN in the conv family (conv_kernels.cu): the bias of
// a convolution over contiguous NCHW or nhwc (channels_last) tensors (HW = H*W), in f32, bf16 or
// f16 through load_as_f32 / store_from_f32 (core/dtype.h).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/dtype.h"

namespace dplab::cuda {

// y[n, c, :] += b[c].
cudaError_t launch_add_channel_bias(void* y, DType yt, int64_t N, int64_t C, int64_t HW,
                                    const void* b, DType bt, bool channels_last, cudaStream_t s);
// db[c] = sum over n and hw of dy[n, c, hw] (one block per channel, double accumulation).
cudaError_t launch_channel_sum(const void* dy, DType dyt, int64_t N, int64_t C, int64_t HW,
                               void* db, DType dbt, bool channels_last, cudaStream_t s);

}  // namespace dplab::cuda
