// CUDA kernels of the gemm family that cuBLAS does not provide in the form dplab needs: the
// bias broadcast of a fully connected layer, its gradient (column sums), and the k == 0 case of
// a product (c = beta * c).
#include "dplab/core/cuda/launch_gemm.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : b);
}

__global__ void add_row_bias_kernel(void* y, DType yt, int64_t M, int64_t N, int64_t ld,
                                    const void* b, DType bt) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < M * N;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / N, j = k % N;
    const int64_t at = i * ld + j;
    store_from_f32(y, yt, at, load_as_f32(y, yt, at) + load_as_f32(b, bt, j));
  }
}

// Column sums: a block covers kCols columns with kRows row lanes; lane r sums rows r, r+kRows,
// ... in double, then lane 0 adds the kRows partials in lane order (deterministic).
constexpr int kCols = 32, kRows = 8;
__global__ void sum_rows_kernel(const void* dy, DType dyt, int64_t M, int64_t N, int64_t ld,
                                void* db, DType dbt) {
  __shared__ double part[kRows][kCols];
  const int64_t j = blockIdx.x * int64_t(kCols) + threadIdx.x;
  double acc = 0.0;
  if (j < N)
    for (int64_t i = threadIdx.y; i < M; i += kRows) acc += load_as_f32(dy, dyt, i * ld + j);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < N) {
    double total = 0.0;
    for (int r = 0; r < kRows; ++r) total += part[r][threadIdx.x];
    store_from_f32(db, dbt, j, static_cast<float>(total));
  }
}

__global__ void scale_matrix_kernel(void* c, DType ct, int64_t M, int64_t N, int64_t ld,
                                    float beta) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < M * N;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = (k / N) * ld + k % N;
    store_from_f32(c, ct, at, beta == 0.0f ? 0.0f : beta * load_as_f32(c, ct, at));
  }
}

}  // namespace

cudaError_t launch_add_row_bias(void* y, DType yt, int64_t M, int64_t N, int64_t ld, const void* b,
                                DType bt, cudaStream_t s) {
  if (M * N == 0) return cudaSuccess;
  add_row_bias_kernel<<<blocks_for(M * N), kThreads, 0, s>>>(y, yt, M, N, ld, b, bt);
  return cudaGetLastError();
}

cudaError_t launch_sum_rows(const void* dy, DType dyt, int64_t M, int64_t N, int64_t ld, void* db,
                            DType dbt, cudaStream_t s) {
  if (N == 0) return cudaSuccess;
  const int64_t blocks = (N + kCols - 1) / kCols;
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  sum_rows_kernel<<<static_cast<unsigned>(blocks), dim3(kCols, kRows), 0, s>>>(dy, dyt, M, N, ld,
                                                                               db, dbt);
  return cudaGetLastError();
}

cudaError_t launch_scale_matrix(void* c, DType ct, int64_t M, int64_t N, int64_t ld, float beta,
                                cudaStream_t s) {
  if (M * N == 0) return cudaSuccess;
  scale_matrix_kernel<<<blocks_for(M * N), kThreads, 0, s>>>(c, ct, M, N, ld, beta);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
