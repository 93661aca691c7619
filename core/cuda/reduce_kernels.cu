// CUDA reductions: sum over the keepdim-shaped dims, sum of squares, argmax. Sums accumulate in
// double like ref (core/cpu/ref/reduce.cpp); only the order of the additions differs (a fixed
// tree instead of a serial loop), and it depends on the shape alone, so results repeat bit for
// bit from run to run. No atomics anywhere.
#include "dplab/core/cuda/launch_reduce.h"

namespace dplab::cuda {
namespace {

// Rows at least this long are summed by blocks (shorter ones by one thread each); a block's
// chunk of a row has at least kMinChunk elements (8 per thread) before a row is cut in more.
constexpr int64_t kBlockRowMin = 64;
constexpr int64_t kThreadRowsMin = 32768;  // this many rows fill the device one per thread
constexpr int64_t kMinChunk = int64_t(kThreads) * 8;
constexpr int64_t kMaxChunks = 1024;
constexpr int64_t kMaxPartials = int64_t(1) << 20;  // bounds the scratch to 8 MiB
constexpr int64_t kArgmaxBlockMin = 1024;           // argmax rows this long use a block

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// One thread per row, elements in ref's order.
__global__ void sum_rows_kernel(const void* x, DType xt, float* y, Indexer<2> kept, Indexer<1> red,
                                int64_t outputs, int64_t len, float scale) {
  for (int64_t o = first_index(); o < outputs; o += grid_stride()) {
    int64_t base[2];
    kept.offsets(o, base);
    double acc = 0;
    for (int64_t r = 0; r < len; ++r) {
      int64_t off[1];
      red.offsets(r, off);
      acc += load_as_f32(x, xt, base[0] + off[0]);
    }
    y[base[1]] = static_cast<float>(scale * acc);
  }
}

// Block (chunk c = blockIdx.x, row o = blockIdx.y + j·gridDim.y) sums elements [c·chunk,
// (c+1)·chunk) of row o, or their squares, into partials[o·chunks + c].
template <bool kSquares>
__global__ void partial_sums_kernel(const void* x, DType xt, Indexer<2> kept, Indexer<1> red,
                                    int64_t outputs, int64_t len, int64_t chunk, int64_t chunks,
                                    double* partials) {
  __shared__ double sh[kThreads];
  const int64_t c = blockIdx.x;
  const int64_t r0 = c * chunk;
  const int64_t r1 = r0 + chunk < len ? r0 + chunk : len;
  for (int64_t o = blockIdx.y; o < outputs; o += gridDim.y) {
    int64_t base[2];
    kept.offsets(o, base);
    double acc = 0;
    for (int64_t r = r0 + threadIdx.x; r < r1; r += kThreads) {
      int64_t off[1];
      red.offsets(r, off);
      const double v = load_as_f32(x, xt, base[0] + off[0]);
      acc += kSquares ? v * v : v;
    }
    const double s = block_sum(acc, sh);
    if (threadIdx.x == 0) partials[o * chunks + c] = s;
  }
}

// Row o's chunks added in chunk order, scaled and stored like ref.
__global__ void finish_sum_kernel(const double* partials, int64_t chunks, float* y, Indexer<2> kept,
                                  int64_t outputs, float scale) {
  for (int64_t o = first_index(); o < outputs; o += grid_stride()) {
    double acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += partials[o * chunks + c];
    int64_t base[2];
    kept.offsets(o, base);
    y[base[1]] = static_cast<float>(scale * acc);
  }
}

__global__ void finish_total_kernel(const double* partials, int64_t chunks, double* result) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double acc = 0;
  for (int64_t c = 0; c < chunks; ++c) acc += partials[c];
  *result = acc;
}

// ref's argmax of one row, literally: first maximum, and the first NaN ends the search.
__global__ void argmax_rows_kernel(const void* x, DType xt, int64_t* out, Indexer<2> kept,
                                   int64_t outputs, int64_t len, int64_t step) {
  for (int64_t o = first_index(); o < outputs; o += grid_stride()) {
    int64_t base[2];
    kept.offsets(o, base);
    int64_t best_i = 0;
    float best = load_as_f32(x, xt, base[0]);
    for (int64_t k = 1; k < len; ++k) {
      const float v = load_as_f32(x, xt, base[0] + k * step);
      if (best != best) break;  // a NaN is the maximum
      if (v > best || v != v) {
        best = v;
        best_i = k;
      }
    }
    out[base[1]] = best_i;
  }
}

// Merges candidate (v, i) into (bv, bi) so that the result is ref's answer over both sets: the
// smallest-index NaN if either has one, else the larger value, ties going to the smaller index.
// An index of -1 marks an empty candidate.
__device__ __forceinline__ void take_better(float& bv, int64_t& bi, float v, int64_t i) {
  if (i < 0) return;
  if (bi < 0) {
    bv = v;
    bi = i;
    return;
  }
  const bool b_nan = bv != bv, nan = v != v;
  if (b_nan || nan) {
    if (nan && (!b_nan || i < bi)) {
      bv = v;
      bi = i;
    }
    return;
  }
  if (v > bv || (v == bv && i < bi)) {
    bv = v;
    bi = i;
  }
}

// One block per long row: thread t scans k = t, t + kThreads, ... with ref's rule (its subset's
// first NaN or first maximum), then a fixed tree merges the candidates with take_better.
__global__ void argmax_block_kernel(const void* x, DType xt, int64_t* out, Indexer<2> kept,
                                    int64_t outputs, int64_t len, int64_t step) {
  __shared__ float sv[kThreads];
  __shared__ int64_t si[kThreads];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    int64_t base[2];
    kept.offsets(o, base);
    float best = 0.f;
    int64_t best_i = -1;
    for (int64_t k = threadIdx.x; k < len; k += kThreads) {
      const float v = load_as_f32(x, xt, base[0] + k * step);
      if (best_i < 0) {
        best = v;
        best_i = k;
        continue;
      }
      if (best != best) break;
      if (v > best || v != v) {
        best = v;
        best_i = k;
      }
    }
    sv[threadIdx.x] = best;
    si[threadIdx.x] = best_i;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        float bv = sv[threadIdx.x];
        int64_t bi = si[threadIdx.x];
        take_better(bv, bi, sv[threadIdx.x + s], si[threadIdx.x + s]);
        sv[threadIdx.x] = bv;
        si[threadIdx.x] = bi;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[base[1]] = si[0];
    __syncthreads();  // si[0] is read before the next row overwrites it
  }
}

}  // namespace

int64_t sum_chunks(int64_t outputs, int64_t len) {
  if (len < kBlockRowMin || outputs >= kThreadRowsMin) return 0;
  int64_t c = ceil_div(len, kMinChunk);
  if (c > kMaxChunks) c = kMaxChunks;
  const int64_t cap = kMaxPartials / outputs;  // outputs < kThreadRowsMin, so cap >= 32
  if (c > cap) c = cap;
  return c < 1 ? 1 : c;
}

cudaError_t launch_sum(const void* x, DType xt, float* y, const Indexer<2>& kept,
                       const Indexer<1>& red, int64_t outputs, int64_t len, float scale,
                       int64_t chunks, double* partials, cudaStream_t stream) {
  if (outputs == 0) return cudaSuccess;
  if (chunks == 0) {
    sum_rows_kernel<<<blocks_for(outputs), kThreads, 0, stream>>>(x, xt, y, kept, red, outputs, len,
                                                                  scale);
    return cudaGetLastError();
  }
  const int64_t chunk = ceil_div(len, chunks);
  const dim3 grid(static_cast<unsigned>(chunks),
                  static_cast<unsigned>(outputs < 65535 ? outputs : 65535));
  partial_sums_kernel<false>
      <<<grid, kThreads, 0, stream>>>(x, xt, kept, red, outputs, len, chunk, chunks, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  finish_sum_kernel<<<blocks_for(outputs), kThreads, 0, stream>>>(partials, chunks, y, kept,
                                                                  outputs, scale);
  return cudaGetLastError();
}

int64_t sum_of_squares_chunks(int64_t n) {
  int64_t c = ceil_div(n, kMinChunk);
  if (c > kMaxChunks) c = kMaxChunks;
  return c < 1 ? 1 : c;
}

cudaError_t launch_sum_of_squares(const void* x, DType xt, const Indexer<1>& ix, int64_t n,
                                  int64_t chunks, double* partials, double* result,
                                  cudaStream_t stream) {
  // One row (a 0-d kept walk at offset 0) of n elements.
  const Indexer<2> whole{};
  const int64_t chunk = n > 0 ? ceil_div(n, chunks) : 0;
  partial_sums_kernel<true><<<dim3(static_cast<unsigned>(chunks), 1), kThreads, 0, stream>>>(
      x, xt, whole, ix, 1, n, chunk, chunks, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  finish_total_kernel<<<1, 1, 0, stream>>>(partials, chunks, result);
  return cudaGetLastError();
}

cudaError_t launch_argmax(const void* x, DType xt, int64_t* out, const Indexer<2>& kept,
                          int64_t outputs, int64_t len, int64_t step, cudaStream_t stream) {
  if (outputs == 0) return cudaSuccess;
  if (len >= kArgmaxBlockMin) {
    const int64_t blocks = outputs < 65535 * 32 ? outputs : 65535 * 32;
    argmax_block_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, xt, out, kept,
                                                                                outputs, len, step);
  } else {
    argmax_rows_kernel<<<blocks_for(outputs), kThreads, 0, stream>>>(x, xt, out, kept, outputs, len,
                                                                     step);
  }
  return cudaGetLastError();
}

}  // namespace dplab::cuda
