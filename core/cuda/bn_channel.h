// The per-channel work of dplab's CUDA batch-norm kernels (norm_kernels.cu) as plain DPLAB_HD
// code, so the CPU tests run it too (tests/core/test_bn_channel.cpp). On NCHW activations S blocks
// share a channel (bn_blocks_per_channel), their T = 256·S threads take its elements t, t + T,
// ... (ChannelWalk), each block adds its threads' shares (a fixed tree, block_sum2) into one
// partial per block, and the next kernel adds the S partials in block order (bn_total) before
// the next pass; the test adds them on the host. On nhwc activations (channels_last) the same
// per-channel work runs on another split, so that neighbouring threads read neighbouring
// channels (bn_row_blocks below). Expressions follow core/cpu/ref/norm.cpp term by term,
// including which products are float and which double, so results differ from the reference only in
// the order of the double sums. Activations of any float dtype (load_as_f32 / store_from_f32: f32
// arithmetic, each output rounded once); parameters and statistics f32.
#pragma once
#include <cmath>
#include <cstdint>

#include "dplab/core/cuda/channel_walk.h"
#include "dplab/core/dtype.h"
#include "dplab/core/functors.h"
#include "dplab/core/hostdevice.h"

namespace dplab::cuda {

// What follows batch norm in the same pass (core/kernels/norm.h's fused kernels).
enum class BnTail : int { none = 0, relu = 1, add_relu = 2 };

// Batch norm forward on [N, C, HW] contiguous activations of any float dtype: training computes the
// batch statistics (saved, and the running ones updated when given), eval reads the running ones;
// then y = bn(x), with ReLU or relu(bn(x) + r) as the tail says, each output computed in f32 and
// rounded once into yt.
struct BnForward {
  const void* x = nullptr;
  DType xt = DType::f32;
  const void* r = nullptr;  // the residual (tail add_relu), dtype rt
  DType rt = DType::f32;
  void* y = nullptr;
  DType yt = DType::f32;
  const float* weight = nullptr;  // null: ones
  const float* bias = nullptr;    // null: zeros
  float* running_mean = nullptr;  // training: updated when not null; eval: read
  float* running_var = nullptr;
  float momentum = 0.0f, eps = 0.0f;
  float* save_mean = nullptr;  // training only
  float* save_invstd = nullptr;
  int64_t n = 0, c = 0, hw = 0;
  bool channels_last = false;  // x, r and y nhwc (else NCHW-contiguous)
  bool training = true;
  BnTail tail = BnTail::none;
};

// Backward with given (mean, invstd), in the reference's arithmetic:
// g = dy, masked where y <= 0 when y (the forward's output after a ReLU tail) is given;
// dresidual = g; dweight = sum g*xhat, dbias = sum g (double sums); dx with (training) or
// without the batch-statistics terms. Activations of any float dtype; any of dx, dresidual,
// dweight, dbias may be null.
struct BnBackward {
  const void* dy = nullptr;
  DType dyt = DType::f32;
  const void* x = nullptr;
  DType xt = DType::f32;
  const void* y = nullptr;  // null: no ReLU mask
  DType yt = DType::f32;
  const float* weight = nullptr;
  const float* mean = nullptr;
  const float* invstd = nullptr;
  bool training = true;
  int64_t n = 0, c = 0, hw = 0;
  bool channels_last = false;  // dy, x, y, dx and dresidual nhwc (else NCHW-contiguous)
  void* dx = nullptr;
  DType dxt = DType::f32;
  void* dresidual = nullptr;
  DType drt = DType::f32;
  float* dweight = nullptr;
  float* dbias = nullptr;
};

// Blocks a kernel gives one channel of m values: one per 16,384 values (64 per thread of a
// 256-thread block), at most 64, so a layer with few channels and large planes (a ResNet stem:
// 64 channels of 802,816 values at batch 256) still fills the device. A function of the shape
// only, so the order of the sums, and the results, do not depend on the device.
constexpr int64_t kBnValuesPerBlock = 16384;
constexpr int64_t kBnMaxBlocksPerChannel = 64;
DPLAB_HD int64_t bn_blocks_per_channel(int64_t m) {
  const int64_t s = (m + kBnValuesPerBlock - 1) / kBnValuesPerBlock;
  return s < 1 ? 1 : (s > kBnMaxBlocksPerChannel ? kBnMaxBlocksPerChannel : s);
}

// Adds the S partial sums of channel c (stored [C][S]) in block order: every block that needs
// the total gets the same bits.
DPLAB_HD double bn_total(const double* part, int64_t c, int64_t S) {
  double s = 0.0;
  for (int64_t i = 0; i < S; ++i) s += part[c * S + i];
  return s;
}

// The nhwc kernels (channels_last): a block of kBnTileChannels × kBnLanes threads takes
// kBnTileChannels neighbouring channels (threadIdx.x: one channel each, so a warp reads 32
// neighbouring values of one row) and kBnLanes row lanes (threadIdx.y); the grid's S row blocks
// share the rows, lane t = block·kBnLanes + threadIdx.y of T = S·kBnLanes taking rows t, t + T,
// ... Each block adds its lanes (a fixed tree) into one partial per (row block, channel), stored
// [S][C] so neighbouring channels' partials are neighbours; the next kernel adds them in block
// order (bn_total_rows). S: one row block per 2,048 rows (256 per lane), at most 512, a
// function of the shape only (so the sums' order does not depend on the device).
constexpr int64_t kBnTileChannels = 32;
constexpr int64_t kBnLanes = 8;
constexpr int64_t kBnRowsPerBlock = 2048;
constexpr int64_t kBnMaxRowBlocks = 512;
DPLAB_HD int64_t bn_row_blocks(int64_t m) {
  const int64_t s = (m + kBnRowsPerBlock - 1) / kBnRowsPerBlock;
  return s < 1 ? 1 : (s > kBnMaxRowBlocks ? kBnMaxRowBlocks : s);
}
DPLAB_HD double bn_total_rows(const double* part, int64_t c, int64_t C, int64_t S) {
  double s = 0.0;
  for (int64_t i = 0; i < S; ++i) s += part[i * C + c];
  return s;
}

// Channel c of a forward pass. Training: sum_x over every thread -> set_mean, then
// sum_sq_dev over every thread -> set_var (the writer, one thread, saves the statistics and
// updates the running ones); eval: use_running. Then apply on every thread.
class BnForwardChannel {
 public:
  DPLAB_HD BnForwardChannel(const BnForward& a, int64_t c) : a_(a), c_(c), m_(a.n * a.hw) {}

  // This thread's share of Σx.
  DPLAB_HD double sum_x(int64_t t, int64_t T) const {
    double s = 0.0;
    ChannelWalk w(t, T, c_, a_.c, a_.hw, a_.channels_last);
    for (int64_t j = t; j < m_; j += T, w.next()) s += load_as_f32(a_.x, a_.xt, w.offset());
    return s;
  }
  DPLAB_HD void set_mean(double sum) { mean_ = sum / m_; }
  // This thread's share of Σ(x − mean)².
  DPLAB_HD double sum_sq_dev(int64_t t, int64_t T) const {
    double ss = 0.0;
    ChannelWalk w(t, T, c_, a_.c, a_.hw, a_.channels_last);
    for (int64_t j = t; j < m_; j += T, w.next()) {
      const double dv = load_as_f32(a_.x, a_.xt, w.offset()) - mean_;
      ss += dv * dv;
    }
    return ss;
  }
  DPLAB_HD void set_var(double ss, bool writer) {
    const double var = ss / m_;  // biased: what normalises the batch
    invstd_ = 1.0 / ::sqrt(var + a_.eps);
    if (!writer) return;
    a_.save_mean[c_] = static_cast<float>(mean_);
    a_.save_invstd[c_] = static_cast<float>(invstd_);
    const double mom = a_.momentum;
    if (a_.running_mean)
      a_.running_mean[c_] = static_cast<float>((1.0 - mom) * a_.running_mean[c_] + mom * mean_);
    if (a_.running_var) {
      const double unbiased = m_ > 1 ? ss / (m_ - 1) : var;
      a_.running_var[c_] = static_cast<float>((1.0 - mom) * a_.running_var[c_] + mom * unbiased);
    }
  }
  DPLAB_HD void use_running() {
    invstd_ = 1.0 / ::sqrt(static_cast<double>(a_.running_var[c_]) + a_.eps);
  }
  // y = bn(x) and the tail, on this thread's elements.
  DPLAB_HD void apply(int64_t t, int64_t T) const {
    const double scale = a_.weight ? a_.weight[c_] : 1.0, shift = a_.bias ? a_.bias[c_] : 0.0;
    const float rmean = a_.training ? 0.0f : a_.running_mean[c_];
    ChannelWalk w(t, T, c_, a_.c, a_.hw, a_.channels_last);
    for (int64_t j = t; j < m_; j += T, w.next()) {
      const int64_t k = w.offset();
      const float xk = load_as_f32(a_.x, a_.xt, k);
      // The reference's expression types: training subtracts the double mean, eval the f32
      // running mean in f32.
      const double centred = a_.training ? xk - mean_ : static_cast<double>(xk - rmean);
      float v = static_cast<float>(centred * invstd_ * scale + shift);
      if (a_.tail == BnTail::relu) v = fn::Relu{}(v);
      if (a_.tail == BnTail::add_relu) v = fn::AddRelu{}(v, load_as_f32(a_.r, a_.rt, k));
      store_from_f32(a_.y, a_.yt, k, v);
    }
  }

 private:
  const BnForward& a_;
  int64_t c_, m_;
  double mean_ = 0.0, invstd_ = 0.0;
};

// Channel c of a backward pass: sums over every thread (which also writes dresidual) ->
// set_sums (the writer stores dweight and dbias), then dx on every thread.
class BnBackwardChannel {
 public:
  DPLAB_HD BnBackwardChannel(const BnBackward& a, int64_t c)
      : a_(a), c_(c), m_(a.n * a.hw), mu_(a.mean[c]), is_(a.invstd[c]) {}

  // This thread's shares of Σg and Σg·x̂ (g: dy, masked by the ReLU where y is given); writes
  // dresidual = g on its elements.
  DPLAB_HD void sums(int64_t t, int64_t T, double& sum_dy, double& sum_dy_xhat) const {
    sum_dy = 0.0;
    sum_dy_xhat = 0.0;
    ChannelWalk w(t, T, c_, a_.c, a_.hw, a_.channels_last);
    for (int64_t j = t; j < m_; j += T, w.next()) {
      const int64_t k = w.offset();
      const float g = grad(k);
      if (a_.dresidual) store_from_f32(a_.dresidual, a_.drt, k, g);
      sum_dy += g;
      sum_dy_xhat += g * (load_as_f32(a_.x, a_.xt, k) - mu_) * static_cast<double>(is_);
    }
  }
  DPLAB_HD void set_sums(double sum_dy, double sum_dy_xhat, bool writer) {
    sum_dy_ = sum_dy;
    sum_dy_xhat_ = sum_dy_xhat;
    if (!writer) return;
    if (a_.dweight) a_.dweight[c_] = static_cast<float>(sum_dy_xhat);
    if (a_.dbias) a_.dbias[c_] = static_cast<float>(sum_dy);
  }
  // dx on this thread's elements (nothing when dx is not wanted).
  DPLAB_HD void dx(int64_t t, int64_t T) const {
    if (!a_.dx) return;
    const double scale = (a_.weight ? a_.weight[c_] : 1.0) * is_;
    ChannelWalk w(t, T, c_, a_.c, a_.hw, a_.channels_last);
    for (int64_t j = t; j < m_; j += T, w.next()) {
      const int64_t k = w.offset();
      const float g = grad(k);
      float v;
      if (a_.training) {
        const double xhat = (load_as_f32(a_.x, a_.xt, k) - mu_) * static_cast<double>(is_);
        v = static_cast<float>(scale * (g - sum_dy_ / m_ - xhat * sum_dy_xhat_ / m_));
      } else {
        v = static_cast<float>(scale * g);
      }
      store_from_f32(a_.dx, a_.dxt, k, v);
    }
  }

 private:
  DPLAB_HD float grad(int64_t k) const {
    const float g = load_as_f32(a_.dy, a_.dyt, k);
    return a_.y ? fn::ReluBackward{}(g, load_as_f32(a_.y, a_.yt, k)) : g;
  }
  const BnBackward& a_;
  int64_t c_, m_;
  float mu_, is_;
  double sum_dy_ = 0.0, sum_dy_xhat_ = 0.0;
};

}  // namespace dplab::cuda
