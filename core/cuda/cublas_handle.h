// One cuBLAS handle per device, created on first use with that device current and bound to
// dplab::cuda::compute_stream(device). Its math mode is set explicitly to CUBLAS_DEFAULT_MATH
// with CUBLAS_COMPUTE_32F used by every f32 product: no TF32 (which rounds operands to a
// 10-bit mantissa), so f32 results match the f32 CPU path to float rounding. Its workspace
// (32 MiB, the size cuBLAS recommends for Hopper) comes from the caching allocator once.
#pragma once
#include <cublas_v2.h>

namespace dplab::cuda {

cublasHandle_t cublas_handle(int device);

}  // namespace dplab::cuda
