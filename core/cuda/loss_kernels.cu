// CUDA softmax and cross-entropy kernels. One warp per row: lane l takes the row's elements
// l, l + 32, ...; the max and the double sums are combined over the warp with a fixed xor
// butterfly (every lane ends with the same value, the same on every run). The per-row
// arithmetic is ref's (core/cpu/ref/loss.cpp) statement by statement, with the row functors of
// core/functors.h.
#include "dplab/core/cuda/launch_loss.h"

#include <math_constants.h>

namespace dplab::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kRowsPerBlock = kThreads / kWarp;

__device__ __forceinline__ float neg_inf() {
  return __int_as_float(0xff800000);
}

// ref's std::max(m, v): keeps m unless m < v, so a NaN never becomes the maximum.
__device__ __forceinline__ float max_keep(float m, float v) {
  return m < v ? v : m;
}

__device__ __forceinline__ float warp_max(float m) {
  for (int off = kWarp / 2; off > 0; off >>= 1) m = max_keep(m, __shfl_xor_sync(kFullMask, m, off));
  return m;
}

__device__ __forceinline__ double warp_sum(double s) {
  for (int off = kWarp / 2; off > 0; off >>= 1) s += __shfl_xor_sync(kFullMask, s, off);
  return s;
}

// Warp w of the grid takes rows w, w + warps, ...; the loop bound is the same for the whole warp,
// so the shuffles always run with all 32 lanes.
__device__ __forceinline__ int64_t first_row() {
  return blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
}
__device__ __forceinline__ int64_t row_stride() {
  return int64_t(gridDim.x) * kRowsPerBlock;
}

__global__ void softmax_forward_kernel(const float* x, float* y, int64_t outer, int64_t c,
                                       int64_t inner, bool take_log) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = outer * inner;
  for (int64_t row = first_row(); row < rows; row += row_stride()) {
    const int64_t o = row / inner, i = row % inner;
    const float* p = x + o * c * inner + i;
    float* q = y + o * c * inner + i;
    float mx = neg_inf();
    for (int64_t k = lane; k < c; k += kWarp) mx = max_keep(mx, p[k * inner]);
    mx = warp_max(mx);
    double s = 0;
    for (int64_t k = lane; k < c; k += kWarp) s += ::exp(static_cast<double>(p[k * inner]) - mx);
    s = warp_sum(s);
    const float ls = static_cast<float>(::log(s));
    for (int64_t k = lane; k < c; k += kWarp) {
      const float z = p[k * inner] - mx;  // shifted first: precise for large logits
      q[k * inner] = take_log ? z - ls : ::expf(z - ls);
    }
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t outer,
                                        int64_t c, int64_t inner, bool take_log) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = outer * inner;
  for (int64_t row = first_row(); row < rows; row += row_stride()) {
    const int64_t o = row / inner, i = row % inner;
    const int64_t base = o * c * inner + i;
    double s = 0;  // log: Σ dy;  softmax: Σ dy·y
    for (int64_t k = lane; k < c; k += kWarp) {
      const int64_t e = base + k * inner;
      s += take_log ? static_cast<double>(dy[e]) : static_cast<double>(dy[e]) * y[e];
    }
    s = warp_sum(s);
    for (int64_t k = lane; k < c; k += kWarp) {
      const int64_t e = base + k * inner;
      dx[e] = take_log ? static_cast<float>(dy[e] - ::expf(y[e]) * s)
                       : static_cast<float>(y[e] * (dy[e] - s));
    }
  }
}

// One warp per row i of logits [n, c]: lse[i] and the row's loss (in double, for the mean).
// A target outside [0, c) is never read through: its row's lse and loss are NaN, so the mean
// loss is NaN and so is every gradient of that row (core/kernels/loss.h), with no host wait.
__global__ void cross_entropy_rows_kernel(const float* logits, const int64_t* target, int64_t n,
                                          int64_t c, float smoothing, float* lse,
                                          double* row_loss) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t i = first_row(); i < n; i += row_stride()) {
    const float* row = logits + i * c;
    float mx = neg_inf();
    for (int64_t k = lane; k < c; k += kWarp) mx = max_keep(mx, row[k]);
    mx = warp_max(mx);
    double s = 0, sum_shifted = 0;
    for (int64_t k = lane; k < c; k += kWarp) {
      s += ::exp(static_cast<double>(row[k]) - mx);
      sum_shifted += row[k] - mx;
    }
    s = warp_sum(s);
    sum_shifted = warp_sum(sum_shifted);
    if (lane == 0) {
      const int64_t t = target[i];
      if (t < 0 || t >= c) {
        lse[i] = CUDART_NAN_F;
        row_loss[i] = CUDART_NAN;
        continue;
      }
      const float ls = static_cast<float>(::log(s));
      lse[i] = fn::log_sum_exp(mx, static_cast<float>(s));  // saved for backward
      row_loss[i] =
          fn::cross_entropy_row(ls, row[t] - mx, static_cast<float>(sum_shifted), c, smoothing);
    }
  }
}

// One block: *loss = float(Σ row_loss / n) with a fixed per-thread order and tree.
__global__ void mean_loss_kernel(const double* row_loss, int64_t n, float* loss) {
  __shared__ double sh[kThreads];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += row_loss[i];
  const double total = block_sum(acc, sh);
  if (threadIdx.x == 0) *loss = n > 0 ? static_cast<float>(total / n) : 0.f;
}

__global__ void cross_entropy_backward_kernel(const float* logits, const int64_t* target,
                                              const float* lse, int64_t n, int64_t c,
                                              float smoothing, float scale, float* dlogits) {
  const int64_t total = n * c;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t i = e / c, k = e % c;
    dlogits[e] = fn::cross_entropy_grad(logits[e], lse[i], k, target[i], c, smoothing, scale);
  }
}

int row_blocks(int64_t rows) {
  return blocks_for(rows, kRowsPerBlock);
}

}  // namespace

cudaError_t launch_softmax_forward(const float* x, float* y, int64_t outer, int64_t c,
                                   int64_t inner, bool log, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || c == 0) return cudaSuccess;
  softmax_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, y, outer, c, inner, log);
  return cudaGetLastError();
}

cudaError_t launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t outer,
                                    int64_t c, int64_t inner, bool log, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || c == 0) return cudaSuccess;
  softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(y, dy, dx, outer, c, inner,
                                                                     log);
  return cudaGetLastError();
}

cudaError_t launch_cross_entropy_forward(const float* logits, const int64_t* target, int64_t n,
                                         int64_t c, float smoothing, float* loss, float* lse,
                                         double* row_loss, cudaStream_t stream) {
  if (n > 0) {
    cross_entropy_rows_kernel<<<row_blocks(n), kThreads, 0, stream>>>(logits, target, n, c,
                                                                      smoothing, lse, row_loss);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  mean_loss_kernel<<<1, kThreads, 0, stream>>>(row_loss, n, loss);
  return cudaGetLastError();
}

cudaError_t launch_cross_entropy_backward(const float* logits, const int64_t* target,
                                          const float* lse, int64_t n, int64_t c, float smoothing,
                                          float grad_scale, float* dlogits, cudaStream_t stream) {
  const int64_t total = n * c;
  if (total == 0) return cudaSuccess;
  cross_entropy_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
      logits, target, lse, n, c, smoothing, grad_scale, dlogits);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
