// Pooling kernels, NCHW, PyTorch semantics: max pooling (with dilation) and average pooling
// with kernel, stride, symmetric padding and ceil_mode; average pooling with or without the
// padding counted in the divisor; adaptive average pooling.
//
// Conventions: x/y/dx/dy are f32 and contiguous; outputs are preallocated by the caller (use
// pool_out_size for their spatial shape) and overwritten.
#pragma once
#include <cstdint>

#include "dplab/core/tensor.h"

namespace dplab {

struct Pool2dParams {
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
};

struct PoolKernels {
  // y [N, C, OH, OW] = max over each window of x [N, C, H, W] (padding never wins).
  // `workspace` receives what backward needs to route gradients to the argmax: its format is
  // private to the backend (the kernel allocates it; pass it back unchanged to the same
  // backend's max_pool2d_backward). The ref backend stores PyTorch's argmax indices: i64
  // [N, C, OH, OW] holding h * W + w within the input plane; the cuda backend the same
  // indices as i32 (core/cuda/pool.cpp). If `workspace` is null the
  // kernel may skip producing it (inference).
  void (*max_pool2d_forward)(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p);
  // dx = gradient of max pooling: dy scattered (summed) onto the argmax of each window.
  void (*max_pool2d_backward)(const Tensor& dy, const Tensor& workspace, Tensor& dx,
                              const Pool2dParams& p);
  // y = mean over each window; the divisor is the window clipped to the padded input
  // (count_include_pad) or to the input itself.
  void (*avg_pool2d_forward)(const Tensor& x, Tensor& y, const Pool2dParams& p);
  void (*avg_pool2d_backward)(const Tensor& dy, Tensor& dx, const Pool2dParams& p);
  // y [N, C, OH, OW]: output cell i averages input rows [floor(i*H/OH), ceil((i+1)*H/OH)),
  // likewise for columns.
  void (*adaptive_avg_pool2d_forward)(const Tensor& x, Tensor& y);
  void (*adaptive_avg_pool2d_backward)(const Tensor& dy, Tensor& dx);
};

PoolKernels ref_pool_kernels();
// The reference loops run in parallel with OpenMP over (n, c) planes: the cpu backend's
// fallback for any case oneDNN rejects (its max-pool workspace is then ref's i64 indices).
PoolKernels omp_pool_kernels();
PoolKernels cpu_pool_kernels();
PoolKernels cuda_pool_kernels();

// Output extent of one spatial dim (PyTorch's rule): floor or ceil of
// (in + 2*pad - dilation*(k-1) - 1) / stride, plus 1; in ceil mode the last window must start
// inside the input or the left padding, else it is dropped.
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                             bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace dplab
