// dplab's own batch-norm kernels: the single-value training case, the backward pass that cuDNN
// does not cover (eval-mode statistics, or one value per channel), and batch norm on bf16
// activations and fused with ReLU or the residual add and ReLU, forward and backward, on any
// float dtype. The per-channel work is core/cuda/bn_channel.h (tested on the CPU); here are the
// blocks that run it, one per channel, and their fixed-tree sums.
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

// One block per channel (core/cuda/bn_channel.h does the per-channel work): the statistics
// (training) or the running ones (eval), then each output written once.
__global__ void bn_forward_kernel(BnForward a) {
  BnForwardChannel ch(a, blockIdx.x);
  if (a.training) {
    double s = ch.sum_x(threadIdx.x, kThreads), unused = 0.0;
    block_sum2(s, unused);
    ch.set_mean(s);
    double ss = ch.sum_sq_dev(threadIdx.x, kThreads);
    block_sum2(ss, unused);
    ch.set_var(ss, threadIdx.x == 0);
  } else {
    ch.use_running();
  }
  ch.apply(threadIdx.x, kThreads);
}

// One block per channel: the two sums (and dresidual), then dx.
__global__ void bn_backward_kernel(BnBackward a) {
  BnBackwardChannel ch(a, blockIdx.x);
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  ch.sums(threadIdx.x, kThreads, sum_dy, sum_dy_xhat);
  block_sum2(sum_dy, sum_dy_xhat);
  ch.set_sums(sum_dy, sum_dy_xhat, threadIdx.x == 0);
  ch.dx(threadIdx.x, kThreads);
}

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

cudaError_t launch_bn_forward(const BnForward& a, cudaStream_t s) {
  if (a.c == 0 || a.n * a.hw == 0) return cudaSuccess;
  if (a.c > 0x7fffffff) return cudaErrorInvalidValue;
  bn_forward_kernel<<<static_cast<unsigned>(a.c), kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_bn_backward(const BnBackward& a, cudaStream_t s) {
  if (a.c == 0) return cudaSuccess;
  if (a.c > 0x7fffffff) return cudaErrorInvalidValue;
  bn_backward_kernel<<<static_cast<unsigned>(a.c), kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
