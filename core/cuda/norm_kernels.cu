// dplab's own batch-norm kernels: the single-value training case, the backward pass that cuDNN
// does not cover (eval-mode statistics, or one value per channel), and batch norm on bf16
// activations and fused with ReLU or the residual add and ReLU, forward and backward, on any
// float dtype. The per-channel work is core/cuda/bn_channel.h (tested on the CPU); here are the
// kernels that run it and their fixed-tree sums: on NCHW activations S blocks per channel, on
// nhwc ones blocks of 32 channels × 8 row lanes and S row blocks (bn_channel.h says why).
#include "dplab/core/cuda/launch_norm.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void bn_train_single_kernel(const float* x, const float* w, const float* b, float* rm,
                                       float* rv, float momentum, float eps, float* y,
                                       float* save_mean, float* save_invstd, int64_t C) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < C;
       c += int64_t(gridDim.x) * blockDim.x) {
    const double mean = static_cast<double>(x[c]);  // s / m with m = 1
    const double dv = x[c] - mean;
    const double ss = dv * dv;
    const double var = ss;  // ss / m
    const double invstd = 1.0 / sqrt(var + eps);
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    const double scale = w ? w[c] : 1.0, shift = b ? b[c] : 0.0;
    y[c] = static_cast<float>((x[c] - mean) * invstd * scale + shift);
    if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mean);
    if (rv) rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * var);
  }
}

__global__ void fill_kernel(float* p, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = v;
}

// Block-wide sum of two doubles; every thread gets the totals. The leading barrier lets a
// kernel call it twice (the second call's writes wait for every read of the first's result).
__device__ void block_sum2(double& a, double& b) {
  __shared__ double sa[kThreads], sb[kThreads];
  __syncthreads();
  sa[threadIdx.x] = a;
  sb[threadIdx.x] = b;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      sa[threadIdx.x] += sa[threadIdx.x + stride];
      sb[threadIdx.x] += sb[threadIdx.x + stride];
    }
    __syncthreads();
  }
  a = sa[0];
  b = sb[0];
}

// Grid (C, S): blockIdx.x is the channel, blockIdx.y the block's share of it; the per-channel
// work is core/cuda/bn_channel.h. Each pass is its own kernel, so the S blocks of a channel meet
// through the partial sums between them.
__device__ __forceinline__ int64_t share_thread() {
  return blockIdx.y * int64_t(kThreads) + threadIdx.x;
}
__device__ __forceinline__ int64_t share_threads() {
  return gridDim.y * int64_t(kThreads);
}
// Thread 0 of the channel's first block: the one that writes per-channel results.
__device__ __forceinline__ bool channel_writer() {
  return blockIdx.y == 0 && threadIdx.x == 0;
}
__device__ __forceinline__ void store_partial(double* part, double v) {
  if (threadIdx.x == 0) part[int64_t(blockIdx.x) * gridDim.y + blockIdx.y] = v;
}

// Training, pass 1: Σx per block.
__global__ void bn_sum_x_kernel(BnForward a, double* sum_x) {
  BnForwardChannel ch(a, blockIdx.x);
  double s = ch.sum_x(share_thread(), share_threads()), unused = 0.0;
  block_sum2(s, unused);
  store_partial(sum_x, s);
}

// Training, pass 2: Σ(x − mean)² per block.
__global__ void bn_sum_sq_kernel(BnForward a, const double* sum_x, double* sum_sq) {
  BnForwardChannel ch(a, blockIdx.x);
  ch.set_mean(bn_total(sum_x, blockIdx.x, gridDim.y));
  double ss = ch.sum_sq_dev(share_thread(), share_threads()), unused = 0.0;
  block_sum2(ss, unused);
  store_partial(sum_sq, ss);
}

// Last pass: the statistics (training: from the partials; the channel's writer saves them and
// updates the running ones) or the running ones (eval), then each output written once.
__global__ void bn_apply_kernel(BnForward a, const double* sum_x, const double* sum_sq) {
  BnForwardChannel ch(a, blockIdx.x);
  if (a.training) {
    ch.set_mean(bn_total(sum_x, blockIdx.x, gridDim.y));
    ch.set_var(bn_total(sum_sq, blockIdx.x, gridDim.y), channel_writer());
  } else {
    ch.use_running();
  }
  ch.apply(share_thread(), share_threads());
}

// Backward, pass 1: Σg and Σg·x̂ per block (and dresidual).
__global__ void bn_grad_sums_kernel(BnBackward a, double* sum_dy, double* sum_dy_xhat) {
  BnBackwardChannel ch(a, blockIdx.x);
  double s1 = 0.0, s2 = 0.0;
  ch.sums(share_thread(), share_threads(), s1, s2);
  block_sum2(s1, s2);
  store_partial(sum_dy, s1);
  store_partial(sum_dy_xhat, s2);
}

// Backward, pass 2: the totals (the writer stores dweight and dbias), then dx.
__global__ void bn_dx_kernel(BnBackward a, const double* sum_dy, const double* sum_dy_xhat) {
  BnBackwardChannel ch(a, blockIdx.x);
  ch.set_sums(bn_total(sum_dy, blockIdx.x, gridDim.y), bn_total(sum_dy_xhat, blockIdx.x, gridDim.y),
              channel_writer());
  ch.dx(share_thread(), share_threads());
}

// ---- nhwc (channels_last): grid (ceil(C / 32), S), block (32, 8) ----

__device__ __forceinline__ int64_t tile_channel() {
  return blockIdx.x * kBnTileChannels + threadIdx.x;
}
__device__ __forceinline__ int64_t lane_thread() {
  return blockIdx.y * kBnLanes + threadIdx.y;
}
__device__ __forceinline__ int64_t lane_threads() {
  return gridDim.y * kBnLanes;
}
__device__ __forceinline__ bool rows_writer() {
  return blockIdx.y == 0 && threadIdx.y == 0;
}

// Per channel (threadIdx.x), the sums of two doubles over the block's lanes (a fixed tree over
// threadIdx.y); every thread gets its channel's totals. The leading barrier lets a kernel call
// it twice.
__device__ void lane_sum2(double& a, double& b) {
  __shared__ double sa[kBnLanes][kBnTileChannels], sb[kBnLanes][kBnTileChannels];
  __syncthreads();
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  for (int stride = kBnLanes / 2; stride > 0; stride /= 2) {
    if (threadIdx.y < stride) {
      sa[threadIdx.y][threadIdx.x] += sa[threadIdx.y + stride][threadIdx.x];
      sb[threadIdx.y][threadIdx.x] += sb[threadIdx.y + stride][threadIdx.x];
    }
    __syncthreads();
  }
  a = sa[0][threadIdx.x];
  b = sb[0][threadIdx.x];
}

// Channel c's total of the S row blocks' partials ([S][C]), added once per block by lane 0 and
// shared with the other lanes (0 past the last channel). Every thread of the block calls it.
__device__ double rows_total(const double* part, int64_t c, int64_t C) {
  __shared__ double total[kBnTileChannels];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) total[threadIdx.x] = bn_total_rows(part, c, C, gridDim.y);
  __syncthreads();
  return c < C ? total[threadIdx.x] : 0.0;
}

__device__ __forceinline__ void store_rows_partial(double* part, int64_t c, int64_t C, double v) {
  if (threadIdx.y == 0 && c < C) part[int64_t(blockIdx.y) * C + c] = v;
}

__global__ void bn_sum_x_rows_kernel(BnForward a, double* sum_x) {
  const int64_t c = tile_channel();
  double s = 0.0, unused = 0.0;
  if (c < a.c) s = BnForwardChannel(a, c).sum_x(lane_thread(), lane_threads());
  lane_sum2(s, unused);
  store_rows_partial(sum_x, c, a.c, s);
}

__global__ void bn_sum_sq_rows_kernel(BnForward a, const double* sum_x, double* sum_sq) {
  const int64_t c = tile_channel();
  const double sx = rows_total(sum_x, c, a.c);
  double ss = 0.0, unused = 0.0;
  if (c < a.c) {
    BnForwardChannel ch(a, c);
    ch.set_mean(sx);
    ss = ch.sum_sq_dev(lane_thread(), lane_threads());
  }
  lane_sum2(ss, unused);
  store_rows_partial(sum_sq, c, a.c, ss);
}

__global__ void bn_apply_rows_kernel(BnForward a, const double* sum_x, const double* sum_sq) {
  const int64_t c = tile_channel();
  double sx = 0.0, ss = 0.0;
  if (a.training) {  // the same for every thread: all of them reach the barriers
    sx = rows_total(sum_x, c, a.c);
    ss = rows_total(sum_sq, c, a.c);
  }
  if (c >= a.c) return;
  BnForwardChannel ch(a, c);
  if (a.training) {
    ch.set_mean(sx);
    ch.set_var(ss, rows_writer());
  } else {
    ch.use_running();
  }
  ch.apply(lane_thread(), lane_threads());
}

__global__ void bn_grad_sums_rows_kernel(BnBackward a, double* sum_dy, double* sum_dy_xhat) {
  const int64_t c = tile_channel();
  double s1 = 0.0, s2 = 0.0;
  if (c < a.c) BnBackwardChannel(a, c).sums(lane_thread(), lane_threads(), s1, s2);
  lane_sum2(s1, s2);
  store_rows_partial(sum_dy, c, a.c, s1);
  store_rows_partial(sum_dy_xhat, c, a.c, s2);
}

__global__ void bn_dx_rows_kernel(BnBackward a, const double* sum_dy, const double* sum_dy_xhat) {
  const int64_t c = tile_channel();
  const double s1 = rows_total(sum_dy, c, a.c), s2 = rows_total(sum_dy_xhat, c, a.c);
  if (c >= a.c) return;
  BnBackwardChannel ch(a, c);
  ch.set_sums(s1, s2, rows_writer());
  ch.dx(lane_thread(), lane_threads());
}

// The (grid, block) of the nhwc kernels for C channels of m rows.
struct RowsLaunch {
  dim3 grid, block;
  RowsLaunch(int64_t C, int64_t m)
      : grid(static_cast<unsigned>((C + kBnTileChannels - 1) / kBnTileChannels),
             static_cast<unsigned>(bn_row_blocks(m))),
        block(static_cast<unsigned>(kBnTileChannels), static_cast<unsigned>(kBnLanes)) {}
};

}  // namespace

cudaError_t launch_bn_fill(float* p, int64_t n, float value, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  fill_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, s>>>(p, n,
                                                                                          value);
  return cudaGetLastError();
}

cudaError_t launch_bn_train_single(const float* x, const float* w, const float* b,
                                   float* running_mean, float* running_var, float momentum,
                                   float eps, float* y, float* save_mean, float* save_invstd,
                                   int64_t C, cudaStream_t s) {
  if (C == 0) return cudaSuccess;
  const int64_t blocks = (C + kThreads - 1) / kThreads;
  bn_train_single_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0,
                           s>>>(x, w, b, running_mean, running_var, momentum, eps, y, save_mean,
                                save_invstd, C);
  return cudaGetLastError();
}

int64_t bn_partials(int64_t C, int64_t m, bool channels_last) {
  return 2 * C * (channels_last ? bn_row_blocks(m) : bn_blocks_per_channel(m));
}

cudaError_t launch_bn_forward(const BnForward& a, double* partials, cudaStream_t s) {
  const int64_t m = a.n * a.hw;
  if (a.c == 0 || m == 0) return cudaSuccess;
  if (a.c > 0x7fffffff) return cudaErrorInvalidValue;
  if (a.channels_last) {
    const RowsLaunch l(a.c, m);
    double* sum_x = partials;
    double* sum_sq = partials + a.c * bn_row_blocks(m);
    if (a.training) {
      bn_sum_x_rows_kernel<<<l.grid, l.block, 0, s>>>(a, sum_x);
      bn_sum_sq_rows_kernel<<<l.grid, l.block, 0, s>>>(a, sum_x, sum_sq);
    }
    bn_apply_rows_kernel<<<l.grid, l.block, 0, s>>>(a, sum_x, sum_sq);
    return cudaGetLastError();
  }
  const int64_t S = bn_blocks_per_channel(m);
  const dim3 grid(static_cast<unsigned>(a.c), static_cast<unsigned>(S));
  double* sum_x = partials;
  double* sum_sq = partials + a.c * S;
  if (a.training) {
    bn_sum_x_kernel<<<grid, kThreads, 0, s>>>(a, sum_x);
    bn_sum_sq_kernel<<<grid, kThreads, 0, s>>>(a, sum_x, sum_sq);
  }
  bn_apply_kernel<<<grid, kThreads, 0, s>>>(a, sum_x, sum_sq);
  return cudaGetLastError();
}

cudaError_t launch_bn_backward(const BnBackward& a, double* partials, cudaStream_t s) {
  const int64_t m = a.n * a.hw;
  if (a.c == 0) return cudaSuccess;
  if (a.c > 0x7fffffff) return cudaErrorInvalidValue;
  if (m == 0) {  // no elements (an eval-mode empty batch): the parameters' gradients are empty sums
    cudaError_t e = a.dweight ? launch_bn_fill(a.dweight, a.c, 0.0f, s) : cudaSuccess;
    if (e == cudaSuccess && a.dbias) e = launch_bn_fill(a.dbias, a.c, 0.0f, s);
    return e;
  }
  if (a.channels_last) {
    const RowsLaunch l(a.c, m);
    double* sum_dy = partials;
    double* sum_dy_xhat = partials + a.c * bn_row_blocks(m);
    bn_grad_sums_rows_kernel<<<l.grid, l.block, 0, s>>>(a, sum_dy, sum_dy_xhat);
    bn_dx_rows_kernel<<<l.grid, l.block, 0, s>>>(a, sum_dy, sum_dy_xhat);
    return cudaGetLastError();
  }
  const int64_t S = bn_blocks_per_channel(m);
  const dim3 grid(static_cast<unsigned>(a.c), static_cast<unsigned>(S));
  double* sum_dy = partials;
  double* sum_dy_xhat = partials + a.c * S;
  bn_grad_sums_kernel<<<grid, kThreads, 0, s>>>(a, sum_dy, sum_dy_xhat);
  bn_dx_kernel<<<grid, kThreads, 0, s>>>(a, sum_dy, sum_dy_xhat);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
