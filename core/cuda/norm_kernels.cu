// dplab's own batch-norm kernels: the single-value training case and the backward pass that
// cuDNN does not cover (eval-mode statistics, or one value per channel). Expressions follow
// core/cpu/ref/norm.cpp term by term, including which products are float and which double.
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

// Block-wide sum of two doubles; every thread gets the totals.
__device__ void block_sum2(double& a, double& b) {
  __shared__ double sa[kThreads], sb[kThreads];
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

__global__ void bn_backward_kernel(const float* dy, const float* x, const float* w,
                                   const float* mean, const float* invstd, bool training, int64_t N,
                                   int64_t C, int64_t HW, float* dx, float* dweight, float* dbias) {
  const int64_t c = blockIdx.x;
  const int64_t m = N * HW;
  const float mu = mean[c], is = invstd[c];
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  for (int64_t j = threadIdx.x; j < m; j += kThreads) {
    const int64_t k = ((j / HW) * C + c) * HW + j % HW;
    sum_dy += dy[k];
    sum_dy_xhat += dy[k] * (x[k] - mu) * static_cast<double>(is);
  }
  block_sum2(sum_dy, sum_dy_xhat);
  if (threadIdx.x == 0) {
    if (dweight) dweight[c] = static_cast<float>(sum_dy_xhat);
    if (dbias) dbias[c] = static_cast<float>(sum_dy);
  }
  if (!dx) return;
  const double scale = (w ? w[c] : 1.0) * is;
  for (int64_t j = threadIdx.x; j < m; j += kThreads) {
    const int64_t k = ((j / HW) * C + c) * HW + j % HW;
    if (training) {
      const double xhat = (x[k] - mu) * static_cast<double>(is);
      dx[k] = static_cast<float>(scale * (dy[k] - sum_dy / m - xhat * sum_dy_xhat / m));
    } else {
      dx[k] = static_cast<float>(scale * dy[k]);
    }
  }
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

cudaError_t launch_bn_backward(const float* dy, const float* x, const float* w, const float* mean,
                               const float* invstd, bool training, int64_t N, int64_t C, int64_t HW,
                               float* dx, float* dweight, float* dbias, cudaStream_t s) {
  if (C == 0) return cudaSuccess;
  if (C > 0x7fffffff) return cudaErrorInvalidValue;
  bn_backward_kernel<<<static_cast<unsigned>(C), kThreads, 0, s>>>(dy, x, w, mean, invstd, training,
                                                                   N, C, HW, dx, dweight, dbias);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
