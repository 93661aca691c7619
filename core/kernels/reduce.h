// Reduction kernels. Outputs are preallocated by the caller. A reduction over a set of dims
// writes a "keepdim-shaped" output: the input's shape with every reduced dim set to 1, so one
// kernel serves sum over dims, mean, and the sum-to-shape that broadcasting backward needs.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct ReduceKernels {
  // y = scale * sum of x over the dims where y.shape()[d] == 1 != x.shape()[d]
  // (y.dim() == x.dim(); y f32 any strides; x any float dtype, any strides; accumulation in
  // double in ref, at least f32 pairwise-by-block in cpu).
  void (*sum)(const Tensor& x, Tensor& y, float scale);
  // out[...] = index of the first maximum of x along `dim`; out i64 with x's shape and out's
  // size along `dim` equal to 1. NaN counts as the maximum (as in PyTorch).
  void (*argmax)(const Tensor& x, int dim, Tensor& out);
  // sum of x^2 over all elements, accumulated in double (any float dtype, any strides).
  double (*sum_of_squares)(const Tensor& x);
};

ReduceKernels ref_reduce_kernels();
ReduceKernels cpu_reduce_kernels();
ReduceKernels cuda_reduce_kernels();

}  // namespace dplab
