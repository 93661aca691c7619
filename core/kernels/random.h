// Random kernels. Element i draws philox4x32(seed, stream, i / 4).v[i % 4] (core/philox.h), so
// the result does not depend on thread count, backend or order.
#pragma once
#include "dplab/core/philox.h"
#include "dplab/core/tensor.h"

namespace dplab {

struct RandomKernels {
  // Inverted dropout: keep element i when philox_uniform(draw_i) >= p; mask[i] = keep (u8),
  // y[i] = keep ? x[i] / (1-p) : 0. x, y f32 contiguous (y may be x), mask u8 contiguous.
  void (*dropout_forward)(const Tensor& x, float p, uint64_t seed, uint64_t stream, Tensor& y,
                          Tensor& mask);
  // dx = dy · mask / (1-p); dy, dx f32 contiguous, mask u8.
  void (*dropout_backward)(const Tensor& dy, const Tensor& mask, float p, Tensor& dx);
  // y[i] = lo + (hi - lo) · philox_uniform(draw_i): f32 contiguous (initialisers).
  void (*uniform)(uint64_t seed, uint64_t stream, float lo, float hi, Tensor& y);
};

RandomKernels ref_random_kernels();
RandomKernels cpu_random_kernels();
RandomKernels cuda_random_kernels();

// philox_draw_uniform(seed, stream, i), the draw every backend uses, is in core/philox.h (the
// CUDA kernels include that header without the tensor headers).

}  // namespace dplab
