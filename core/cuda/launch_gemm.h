// Launchers of the CUDA kernels beside cuBLAS in the gemm family (gemm_kernels.cu). Matrices
// are row-major with unit column stride and row stride `ld` (elements); every element is
// read and written through load_as_f32 / store_from_f32 (core/dtype.h), so f32, bf16 and f16
// operands share one kernel and round exactly like the CPU casts.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/dtype.h"

namespace dplab::cuda {

// y[i, j] += b[j] for i < M, j < N.
cudaError_t launch_add_row_bias(void* y, DType yt, int64_t M, int64_t N, int64_t ld, const void* b,
                                DType bt, cudaStream_t s);
// db[j] = sum over i < M of dy[i, j] (double accumulation, rows in increasing order).
cudaError_t launch_sum_rows(const void* dy, DType dyt, int64_t M, int64_t N, int64_t ld, void* db,
                            DType dbt, cudaStream_t s);
// c = beta * c, with beta == 0 writing zeros without reading c (BLAS semantics).
cudaError_t launch_scale_matrix(void* c, DType ct, int64_t M, int64_t N, int64_t ld, float beta,
                                cudaStream_t s);

}  // namespace dplab::cuda
