// dplab's own batch-norm kernels: the single-value training case, the backward pass that cuDNN
// does not cover (eval-mode statistics, or one value per channel), and batch norm on bf16
// activations and fused with ReLU or the residual add and ReLU, forward and backward, on any
// float dtype (load_as_f32 / store_from_f32: f32 arithmetic, each output rounded once).
// Expressions follow core/cpu/ref/norm.cpp term by term, including which products are float and
// which double, so results differ from the reference only in the order of the double sums.
#include "dplab/core/cuda/channel_walk.h"
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

// This thread's walk over channel c's N*HW values of a contiguous [N, C, HW] tensor.
__device__ __forceinline__ ChannelWalk channel_walk(int64_t c, int64_t C, int64_t HW) {
  return ChannelWalk(threadIdx.x, kThreads, c, C, HW);
}

// One block per channel: the batch statistics (training; double sums, two passes as the
// reference takes them) or the running ones (eval), then y = bn(x), followed by the tail, each
// output computed in f32 and rounded once into y's dtype.
__global__ void bn_forward_kernel(BnForward a) {
  const int64_t c = blockIdx.x;
  const int64_t m = a.n * a.hw;
  const double scale = a.weight ? a.weight[c] : 1.0, shift = a.bias ? a.bias[c] : 0.0;
  double mean = 0.0, invstd = 0.0;
  if (a.training) {
    double s = 0.0, unused = 0.0;
    ChannelWalk w = channel_walk(c, a.c, a.hw);
    for (int64_t j = threadIdx.x; j < m; j += kThreads, w.next())
      s += load_as_f32(a.x, a.xt, w.offset());
    block_sum2(s, unused);
    mean = s / m;
    double ss = 0.0;
    w = channel_walk(c, a.c, a.hw);
    for (int64_t j = threadIdx.x; j < m; j += kThreads, w.next()) {
      const double dv = load_as_f32(a.x, a.xt, w.offset()) - mean;
      ss += dv * dv;
    }
    block_sum2(ss, unused);
    const double var = ss / m;  // biased: what normalises the batch
    invstd = 1.0 / sqrt(var + a.eps);
    if (threadIdx.x == 0) {
      a.save_mean[c] = static_cast<float>(mean);
      a.save_invstd[c] = static_cast<float>(invstd);
      const double mom = a.momentum;
      if (a.running_mean)
        a.running_mean[c] = static_cast<float>((1.0 - mom) * a.running_mean[c] + mom * mean);
      if (a.running_var) {
        const double unbiased = m > 1 ? ss / (m - 1) : var;
        a.running_var[c] = static_cast<float>((1.0 - mom) * a.running_var[c] + mom * unbiased);
      }
    }
  } else {
    invstd = 1.0 / sqrt(static_cast<double>(a.running_var[c]) + a.eps);
  }
  const float rmean = a.training ? 0.0f : a.running_mean[c];
  ChannelWalk w = channel_walk(c, a.c, a.hw);
  for (int64_t j = threadIdx.x; j < m; j += kThreads, w.next()) {
    const int64_t k = w.offset();
    const float xk = load_as_f32(a.x, a.xt, k);
    // The reference's expression types: training subtracts the double mean, eval the f32
    // running mean in f32.
    const double centred = a.training ? xk - mean : static_cast<double>(xk - rmean);
    float v = static_cast<float>(centred * invstd * scale + shift);
    if (a.tail == BnTail::relu) v = fn::Relu{}(v);
    if (a.tail == BnTail::add_relu) v = fn::AddRelu{}(v, load_as_f32(a.r, a.rt, k));
    store_from_f32(a.y, a.yt, k, v);
  }
}

// One block per channel, in the reference's arithmetic: g = dy (masked where y <= 0 when y is
// given), dresidual = g, dweight = sum g*xhat, dbias = sum g (double sums), and dx with
// (training) or without the batch-statistics terms.
__global__ void bn_backward_kernel(BnBackward a) {
  const int64_t c = blockIdx.x;
  const int64_t m = a.n * a.hw;
  const float mu = a.mean[c], is = a.invstd[c];
  auto grad = [&](int64_t k) {
    const float g = load_as_f32(a.dy, a.dyt, k);
    return a.y ? fn::ReluBackward{}(g, load_as_f32(a.y, a.yt, k)) : g;
  };
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  ChannelWalk w = channel_walk(c, a.c, a.hw);
  for (int64_t j = threadIdx.x; j < m; j += kThreads, w.next()) {
    const int64_t k = w.offset();
    const float g = grad(k);
    if (a.dresidual) store_from_f32(a.dresidual, a.drt, k, g);
    sum_dy += g;
    sum_dy_xhat += g * (load_as_f32(a.x, a.xt, k) - mu) * static_cast<double>(is);
  }
  block_sum2(sum_dy, sum_dy_xhat);
  if (threadIdx.x == 0) {
    if (a.dweight) a.dweight[c] = static_cast<float>(sum_dy_xhat);
    if (a.dbias) a.dbias[c] = static_cast<float>(sum_dy);
  }
  if (!a.dx) return;
  const double scale = (a.weight ? a.weight[c] : 1.0) * is;
  w = channel_walk(c, a.c, a.hw);
  for (int64_t j = threadIdx.x; j < m; j += kThreads, w.next()) {
    const int64_t k = w.offset();
    const float g = grad(k);
    float v;
    if (a.training) {
      const double xhat = (load_as_f32(a.x, a.xt, k) - mu) * static_cast<double>(is);
      v = static_cast<float>(scale * (g - sum_dy / m - xhat * sum_dy_xhat / m));
    } else {
      v = static_cast<float>(scale * g);
    }
    store_from_f32(a.dx, a.dxt, k, v);
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
