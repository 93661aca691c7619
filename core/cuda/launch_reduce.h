// Launchers of the CUDA reduction family (core/kernels/reduce.h); kernels in reduce_kernels.cu.
//
// Determinism: every reduction runs with a fixed block size and a grid, chunking and tree shape
// computed from the problem shape alone, and combines partial results in a fixed order (no
// floating-point atomics), so the same input gives the same bits on every run.
//
// A reduction has `outputs` rows of `len` elements each. Row o starts at offset kept.offsets(o)
// (stride[0]: the input's, stride[1]: the output's) and its elements sit at red.offsets(r)
// from there, r in [0, len).
#pragma once
#include "dplab/core/cuda/launch.h"

namespace dplab::cuda {

// How the rows are split: 0 means one thread sums a whole row (short rows, or so many rows that
// they fill the device on their own); c > 0 means each row is cut into c chunks, each summed by
// one block into a double partial, and a second kernel adds a row's c partials in order. The
// wrapper allocates outputs * c doubles of scratch for the second case.
int64_t sum_chunks(int64_t outputs, int64_t len);

// y[kept.offsets(o)[1]] = float(scale * sum of row o in double) (ref's arithmetic).
// partials: outputs * chunks doubles when chunks > 0 (else unused).
cudaError_t launch_sum(const void* x, DType xt, float* y, const Indexer<2>& kept,
                       const Indexer<1>& red, int64_t outputs, int64_t len, float scale,
                       int64_t chunks, double* partials, cudaStream_t stream);

// *result (device) = sum over the n elements of x (walked by ix) of double(x)^2.
// partials: sum_of_squares_chunks(n) doubles.
int64_t sum_of_squares_chunks(int64_t n);
cudaError_t launch_sum_of_squares(const void* x, DType xt, const Indexer<1>& ix, int64_t n,
                                  int64_t chunks, double* partials, double* result,
                                  cudaStream_t stream);

// out[kept.offsets(o)[1]] = index of the first maximum of row o, NaN counting as the maximum
// (ref's rule); the row's elements are step apart.
cudaError_t launch_argmax(const void* x, DType xt, int64_t* out, const Indexer<2>& kept,
                          int64_t outputs, int64_t len, int64_t step, cudaStream_t stream);

}  // namespace dplab::cuda
