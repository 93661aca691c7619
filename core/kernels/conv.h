// Convolution kernels: 2-D convolution in NCHW with weights [out, in/groups, kh, kw] (PyTorch
// semantics: stride, symmetric zero padding, dilation, groups), its gradient w.r.t. the input
// and its gradient w.r.t. the weight and bias.
//
// Conventions: every tensor is contiguous (or an activation in the backend's non-strided layout,
// nChw16c on cpu and nhwc on cuda: see conv2d_output_layout); outputs are preallocated by the
// caller with the right shape and are overwritten (not accumulated into). Output size per spatial
// dim: out = (in + 2*pad - dilation*(k-1) - 1) / stride + 1 (floor).
//
// Dtypes per backend (any other combination throws, naming it):
// - ref, cpu: x, y, dx, dy f32 or all bf16 (activations under autocast); w and dw f32 (master
//   weights) or of the activations' dtype; b / db f32. Products accumulate in f32; bf16
//   outputs are rounded once. The ref loops compute in f32 on the bf16 values.
// - cuda (cuDNN, core/cuda/conv.cpp): the data operands of one call — x, w, y (forward); dy,
//   w, dx (backward data); x, dy, dw (backward weight) — all f32, all bf16 or all f16, with f32
//   accumulation in every case (f32 without TF32); beside bf16 activations w and dw may be f32
//   (master weights: the kernel rounds w to bf16, and dw is cuDNN's bf16 one widened). The bias
//   b / its gradient db is the dtype of those operands or f32. f16 autocast casts the weights to
//   f16 before the call.
#pragma once
#include <cstdint>

#include "dplab/core/tensor.h"

namespace dplab {

struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

struct ConvKernels {
  // y [N, Cout, OH, OW] = conv(x [N, Cin, H, W], w [Cout, Cin/groups, KH, KW]) + b [Cout].
  // b may be undefined (no bias).
  void (*conv2d_forward)(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y,
                         const Conv2dParams& p);
  // dx [N, Cin, H, W] = d(sum(y * dy)) / dx (the transposed convolution of dy with w).
  void (*conv2d_backward_data)(const Tensor& dy, const Tensor& w, Tensor& dx,
                               const Conv2dParams& p);
  // dw [Cout, Cin/groups, KH, KW] = d(sum(y * dy)) / dw; db [Cout] = sum of dy over N, OH, OW.
  // db may be undefined (no bias gradient wanted).
  void (*conv2d_backward_weight)(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                                 const Conv2dParams& p);
  // The layout conv2d_forward writes y in best (the op allocates y so). Null: always strided.
  // Backends that answer a non-strided layout (cpu: nChw16c, cuda: nhwc) also take x, y, dy and
  // dx in that layout in every pass, beside or instead of NCHW; the others see only strided
  // tensors.
  Layout (*conv2d_output_layout)(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                                 bool bias) = nullptr;
};

// Whether autocast keeps the CPU's activations bf16 (Backend::bf16_activations): where oneDNN
// runs AVX-512 kernels, natively in bf16 with AVX512-BF16 or AMX, else in f32 on blocked
// activations widened by one flat cast. With AVX2 oneDNN's layouts are nChw8c, which dplab's
// tensors do not hold, and widening bf16 around every convolution there measured 8% slower than
// rounding f32 operands (ResNet-50, batch 8, 2 threads, ONEDNN_MAX_CPU_ISA=AVX2: 1,851 against
// 1,712 ms per step): there autocast rounds the operands and keeps f32 activations, as before.
bool cpu_bf16_activations();

ConvKernels ref_conv_kernels();
// The reference loops run in parallel with OpenMP (outer loops split over independent outputs):
// the cpu backend's fallback for any case oneDNN rejects.
ConvKernels omp_conv_kernels();
ConvKernels cpu_conv_kernels();
ConvKernels cuda_conv_kernels();

// Output extent of one spatial dim (PyTorch's rule); may be <= 0 for impossible geometry.
inline int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace dplab
