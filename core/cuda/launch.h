// Kernel launchers: the boundary between .cu files (kernels only; they include nothing but the
// shared DPLAB_HD headers, which keeps nvcc away from fmt and the rest of the C++ library) and
// the .cpp wrappers that validate tensors, report errors with context and check every return
// code. Each launcher returns the launch's cudaError_t for the caller to check.
//
// This header also holds Indexer, the strided N-d walk every family's kernels share: the
// wrapper describes up to N tensors that share one iteration shape (sizes plus one stride array
// per tensor, in elements), make_indexer collapses it, and a kernel thread turns its linear
// element number k (row-major over the shape) into one element offset per tensor. That is
// ref::for_each_index (core/cpu/ref/strided.h) with the loop counter replaced by k.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/dtype.h"
#include "dplab/core/functors.h"
#include "dplab/core/hostdevice.h"

namespace dplab::cuda {

// Dims an Indexer holds after collapsing (a kernel parameter, so it is fixed-size). Wrappers
// throw naming the tensor when a shape needs more.
constexpr int kMaxDims = 8;

template <int N>
struct Indexer {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};

  // off[t] = offset of element k of the row-major walk in tensor t.
  DPLAB_HD void offsets(int64_t k, int64_t* off) const {
    if (ndim == 1) {  // the common, fully collapsed case: no division
      for (int t = 0; t < N; ++t) off[t] = k * stride[t][0];
      return;
    }
    for (int t = 0; t < N; ++t) off[t] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = k % size[d];
      k /= size[d];
      for (int t = 0; t < N; ++t) off[t] += i * stride[t][d];
    }
  }
};

// Builds the Indexer of `ndim` dims of `sizes` for N tensors (strides[t][d]). Size-1 dims are
// dropped (their stride never moves an offset) and a dim is merged into the one outside it when
// every tensor steps over the pair as over one dim (outer stride == inner stride * inner size),
// so a contiguous tensor of any shape walks as one dim. The walk order, and so which element k
// names, is unchanged. Returns false when more than kMaxDims dims remain.
template <int N>
inline bool make_indexer(int ndim, const int64_t* sizes, const int64_t* const* strides,
                         Indexer<N>& ix) {
  ix = Indexer<N>{};
  bool have = false;
  int64_t cur_size = 0;
  int64_t cur_stride[N] = {};
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    if (have) {
      bool merge = true;
      for (int t = 0; t < N; ++t) merge = merge && cur_stride[t] == strides[t][d] * sizes[d];
      if (merge) {
        cur_size *= sizes[d];
        for (int t = 0; t < N; ++t) cur_stride[t] = strides[t][d];
        continue;
      }
      if (ix.ndim == kMaxDims) return false;
      ix.size[ix.ndim] = cur_size;
      for (int t = 0; t < N; ++t) ix.stride[t][ix.ndim] = cur_stride[t];
      ++ix.ndim;
    }
    have = true;
    cur_size = sizes[d];
    for (int t = 0; t < N; ++t) cur_stride[t] = strides[t][d];
  }
  if (have) {
    if (ix.ndim == kMaxDims) return false;
    ix.size[ix.ndim] = cur_size;
    for (int t = 0; t < N; ++t) ix.stride[t][ix.ndim] = cur_stride[t];
    ++ix.ndim;
  }
  return true;
}

#if defined(__CUDACC__)
// ---- kernel-side helpers shared by the .cu files (nvcc only) ---------------------------------
// Threads per block of every dplab kernel. The reductions rely on it being a fixed power of two:
// their tree shapes, and so their rounding, depend on the problem shape only.
constexpr int kThreads = 256;
constexpr int kWarp = 32;

// Blocks for a grid-stride loop over n items (bounded: the loop covers the rest).
inline int blocks_for(int64_t n, int per_block = kThreads) {
  const int64_t b = (n + per_block - 1) / per_block;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : b);
}
__device__ __forceinline__ int64_t first_index() {
  return blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return int64_t(gridDim.x) * blockDim.x;
}

// Sum of v over a block of kThreads threads as a fixed tree (thread i adds thread i + s for
// s = 128, 64, ..., 1), so the rounding depends on nothing but the inputs. Every thread gets the
// result. sh: kThreads doubles of shared memory, free for reuse again on return.
__device__ __forceinline__ double block_sum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();  // everyone has read sh[0] before the caller writes sh again
  return r;
}
#endif

// ---- element-wise family (core/kernels/elementwise.h) ---------------------------------------
// Every launcher walks n elements through its Indexer; n == 0 launches nothing.

// y[off] = the element whose bytes are the low `elem_size` bytes of `bits` (little-endian, as
// both the host and the device are): the wrapper builds those bytes exactly as ref fill does.
cudaError_t launch_fill(void* y, int elem_size, uint64_t bits, const Indexer<1>& ix, int64_t n,
                        cudaStream_t stream);
// Same-dtype strided copy of elem_size-byte elements: ix.stride[0] is src's, [1] dst's.
cudaError_t launch_copy_bytes(const void* src, void* dst, int elem_size, const Indexer<2>& ix,
                              int64_t n, cudaStream_t stream);
// Converting strided copy (src dtype != dst dtype), with ref copy's rules: i64 <-> i32 as
// integers, everything else through f32 (load_as_f32 / store_from_f32 of core/dtype.h).
cudaError_t launch_convert(const void* src, DType st, void* dst, DType dt, const Indexer<2>& ix,
                           int64_t n, cudaStream_t stream);
// dst[b][s][r] = src[b][r][s] for b < batch, r < R, s < S, float dtypes converted through f32
// (NCHW <-> nhwc, tiled so both sides are coalesced). Only where transpose_fits: its grid is
// (S / 32, R / 32, batch) (cudaErrorInvalidValue otherwise).
inline bool transpose_fits(int64_t batch, int64_t R, int64_t S) {
  return batch <= 65535 && (R + 31) / 32 <= 65535 && (S + 31) / 32 <= 0x7fffffff;
}
cudaError_t launch_transpose(const void* src, DType st, void* dst, DType dt, int64_t batch,
                             int64_t R, int64_t S, cudaStream_t stream);
// y[off1] += alpha * x[off0] (x any dtype read as f32).
cudaError_t launch_axpy(float alpha, const void* x, DType xt, float* y, const Indexer<2>& ix,
                        int64_t n, cudaStream_t stream);
// y[off1] = op(x[off0]) with core/functors.h's functor for `op` (s: its scalar), computed in f32
// and stored in y's float dtype yt.
cudaError_t launch_unary(UnaryOp op, float s, const void* x, DType xt, void* y, DType yt,
                         const Indexer<2>& ix, int64_t n, cudaStream_t stream);
// y[off2] = op(a[off0], b[off1]) likewise; broadcast dims carry stride 0 in a's or b's strides.
cudaError_t launch_binary(BinaryOp op, const void* a, DType at, const void* b, DType bt, void* y,
                          DType yt, const Indexer<3>& ix, int64_t n, cudaStream_t stream);
// y[off] += v (add_int_wrapping) for an i64 (wide) or i32 tensor.
cudaError_t launch_add_int(void* y, bool wide, int64_t v, const Indexer<1>& ix, int64_t n,
                           cudaStream_t stream);

}  // namespace dplab::cuda
