// CUDA kernels of the conv family that sit beside cuDNN: the bias add of the forward pass and
// the bias gradient. Written here rather than with cudnnAddTensor/cudnnConvolutionBackwardBias
// so the bias is f32, bf16 or f16 alike and db accumulates in double as the reference does.
#include "dplab/core/cuda/launch_conv.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : b);
}

__global__ void add_channel_bias_kernel(void* y, DType yt, int64_t C, int64_t HW, int64_t total,
                                        const void* b, DType bt, bool channels_last) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < total;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = channels_last ? k % C : (k / HW) % C;
    store_from_f32(y, yt, k, load_as_f32(y, yt, k) + load_as_f32(b, bt, c));
  }
}

// One block per channel: thread t sums elements t, t + kThreads, ... of the channel's N*HW
// elements (in double), then a fixed-shape tree adds the partials (deterministic).
// nhwc: one block per 32 neighbouring channels (threadIdx.x), 8 row lanes (threadIdx.y) taking
// rows j = lane, lane + 8, ... of the [N·HW, C] matrix, so a warp reads 32 neighbouring values of
// one row; then a fixed tree over the lanes (deterministic).
constexpr int kTileChannels = 32, kLanes = 8;
__global__ void channel_sum_rows_kernel(const void* dy, DType dyt, int64_t M, int64_t C, void* db,
                                        DType dbt) {
  __shared__ double part[kLanes][kTileChannels];
  const int64_t c = int64_t(blockIdx.x) * kTileChannels + threadIdx.x;
  double acc = 0.0;
  if (c < C)
    for (int64_t j = threadIdx.y; j < M; j += kLanes) acc += load_as_f32(dy, dyt, j * C + c);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kLanes / 2; stride > 0; stride /= 2) {
    if (threadIdx.y < stride)
      part[threadIdx.y][threadIdx.x] += part[threadIdx.y + stride][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < C)
    store_from_f32(db, dbt, c, static_cast<float>(part[0][threadIdx.x]));
}

__global__ void channel_sum_kernel(const void* dy, DType dyt, int64_t N, int64_t C, int64_t HW,
                                   void* db, DType dbt) {
  __shared__ double part[kThreads];
  const int64_t c = blockIdx.x;
  const int64_t M = N * HW;
  double acc = 0.0;
  for (int64_t j = threadIdx.x; j < M; j += kThreads) {
    const int64_t n = j / HW, i = j % HW;
    acc += load_as_f32(dy, dyt, (n * C + c) * HW + i);
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) store_from_f32(db, dbt, c, static_cast<float>(part[0]));
}

}  // namespace

cudaError_t launch_add_channel_bias(void* y, DType yt, int64_t N, int64_t C, int64_t HW,
                                    const void* b, DType bt, bool channels_last, cudaStream_t s) {
  const int64_t total = N * C * HW;
  if (total == 0) return cudaSuccess;
  add_channel_bias_kernel<<<blocks_for(total), kThreads, 0, s>>>(y, yt, C, HW, total, b, bt,
                                                                 channels_last);
  return cudaGetLastError();
}

cudaError_t launch_channel_sum(const void* dy, DType dyt, int64_t N, int64_t C, int64_t HW,
                               void* db, DType dbt, bool channels_last, cudaStream_t s) {
  if (C == 0) return cudaSuccess;
  if (C > 0x7fffffff) return cudaErrorInvalidValue;
  if (channels_last) {
    const unsigned tiles = static_cast<unsigned>((C + kTileChannels - 1) / kTileChannels);
    channel_sum_rows_kernel<<<tiles, dim3(kTileChannels, kLanes), 0, s>>>(dy, dyt, N * HW, C, db,
                                                                          dbt);
    return cudaGetLastError();
  }
  channel_sum_kernel<<<static_cast<unsigned>(C), kThreads, 0, s>>>(dy, dyt, N, C, HW, db, dbt);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
