// CUDA element-wise kernels: fill, strided copy and conversion, axpy, unary and binary math.
// Each thread takes element numbers k of the row-major walk (grid-stride, so any n runs on a
// bounded grid), asks the Indexer for the element offsets and applies the same DPLAB_HD code the
// reference loops apply (core/dtype.h conversions, core/functors.h functors), so a result has
// the CPU's bits wherever the device's float math does.
#include "dplab/core/cuda/launch.h"

namespace dplab::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* y, T v, Indexer<1> ix, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[1];
    ix.offsets(k, off);
    y[off[0]] = v;
  }
}

template <typename T>
__global__ void copy_kernel(const T* x, T* y, Indexer<2> ix, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[2];
    ix.offsets(k, off);
    y[off[1]] = x[off[0]];
  }
}

// ref copy's conversion rules for one element.
__device__ __forceinline__ void convert_element(const void* s, DType st, int64_t so, void* d,
                                                DType dt, int64_t dof) {
  if (st == DType::i64 && dt == DType::i32) {
    static_cast<int32_t*>(d)[dof] = static_cast<int32_t>(static_cast<const int64_t*>(s)[so]);
  } else if (st == DType::i32 && dt == DType::i64) {
    static_cast<int64_t*>(d)[dof] = static_cast<const int32_t*>(s)[so];
  } else {
    store_from_f32(d, dt, dof, load_as_f32(s, st, so));
  }
}

__global__ void convert_kernel(const void* x, DType xt, void* y, DType yt, Indexer<2> ix,
                               int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[2];
    ix.offsets(k, off);
    convert_element(x, xt, off[0], y, yt, off[1]);
  }
}

// A batch of [R][S] matrices transposed into [S][R] (NCHW <-> nhwc: R, S = C, H·W or H·W, C),
// element by element through f32 as convert_element does for float dtypes. A block of 32 × 8
// threads moves one 32 × 32 tile through shared memory: it reads the tile's rows (neighbouring
// threads, neighbouring s) and writes its columns (neighbouring threads, neighbouring r), so
// both sides are coalesced, where a strided walk would read or write C elements apart. The +1
// column keeps the column reads off one shared-memory bank.
constexpr int kTile = 32;
constexpr int kTileRows = 8;
__global__ void transpose_kernel(const void* x, DType xt, void* y, DType yt, int64_t R, int64_t S) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t base = int64_t(blockIdx.z) * R * S;
  const int64_t r0 = int64_t(blockIdx.y) * kTile, s0 = int64_t(blockIdx.x) * kTile;
  for (int i = threadIdx.y; i < kTile; i += kTileRows) {
    const int64_t r = r0 + i, s = s0 + threadIdx.x;
    if (r < R && s < S) tile[i][threadIdx.x] = load_as_f32(x, xt, base + r * S + s);
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kTileRows) {
    const int64_t s = s0 + i, r = r0 + threadIdx.x;
    if (r < R && s < S) store_from_f32(y, yt, base + s * R + r, tile[threadIdx.x][i]);
  }
}

__global__ void axpy_kernel(float alpha, const void* x, DType xt, float* y, Indexer<2> ix,
                            int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[2];
    ix.offsets(k, off);
    y[off[1]] += alpha * load_as_f32(x, xt, off[0]);
  }
}

// Computed in f32 and rounded once into y's dtype (f32: stored as is), as ref does.
template <typename F>
__global__ void unary_kernel(F f, const void* x, DType xt, void* y, DType yt, Indexer<2> ix,
                             int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[2];
    ix.offsets(k, off);
    store_from_f32(y, yt, off[1], f(load_as_f32(x, xt, off[0])));
  }
}

template <typename F>
__global__ void binary_kernel(F f, const void* a, DType at, const void* b, DType bt, void* y,
                              DType yt, Indexer<3> ix, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[3];
    ix.offsets(k, off);
    store_from_f32(y, yt, off[2], f(load_as_f32(a, at, off[0]), load_as_f32(b, bt, off[1])));
  }
}

template <typename T>
__global__ void add_int_kernel(T* y, int64_t v, Indexer<1> ix, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    int64_t off[1];
    ix.offsets(k, off);
    y[off[0]] = static_cast<T>(add_int_wrapping(y[off[0]], v));
  }
}

}  // namespace

cudaError_t launch_fill(void* y, int elem_size, uint64_t bits, const Indexer<1>& ix, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // static_cast to the narrower type keeps the low bytes: the element's bytes on little-endian.
  switch (elem_size) {
    case 1:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint8_t*>(y),
                                                          static_cast<uint8_t>(bits), ix, n);
      break;
    case 2:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint16_t*>(y),
                                                          static_cast<uint16_t>(bits), ix, n);
      break;
    case 4:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint32_t*>(y),
                                                          static_cast<uint32_t>(bits), ix, n);
      break;
    case 8:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint64_t*>(y), bits, ix, n);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_copy_bytes(const void* src, void* dst, int elem_size, const Indexer<2>& ix,
                              int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                          static_cast<uint8_t*>(dst), ix, n);
      break;
    case 2:
      copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint16_t*>(src),
                                                          static_cast<uint16_t*>(dst), ix, n);
      break;
    case 4:
      copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint32_t*>(src),
                                                          static_cast<uint32_t*>(dst), ix, n);
      break;
    case 8:
      copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint64_t*>(src),
                                                          static_cast<uint64_t*>(dst), ix, n);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_convert(const void* src, DType st, void* dst, DType dt, const Indexer<2>& ix,
                           int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, st, dst, dt, ix, n);
  return cudaGetLastError();
}

cudaError_t launch_transpose(const void* src, DType st, void* dst, DType dt, int64_t batch,
                             int64_t R, int64_t S, cudaStream_t stream) {
  if (batch == 0 || R == 0 || S == 0) return cudaSuccess;
  if (!transpose_fits(batch, R, S)) return cudaErrorInvalidValue;
  const int64_t gx = (S + kTile - 1) / kTile, gy = (R + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                  static_cast<unsigned>(batch));
  transpose_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, st, dst, dt, R, S);
  return cudaGetLastError();
}

cudaError_t launch_axpy(float alpha, const void* x, DType xt, float* y, const Indexer<2>& ix,
                        int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  axpy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(alpha, x, xt, y, ix, n);
  return cudaGetLastError();
}

cudaError_t launch_unary(UnaryOp op, float s, const void* x, DType xt, void* y, DType yt,
                         const Indexer<2>& ix, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dispatch_unary(op, s, [&](auto f) {
    unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, x, xt, y, yt, ix, n);
  });
  return cudaGetLastError();
}

cudaError_t launch_binary(BinaryOp op, const void* a, DType at, const void* b, DType bt, void* y,
                          DType yt, const Indexer<3>& ix, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dispatch_binary(op, [&](auto f) {
    binary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, a, at, b, bt, y, yt, ix, n);
  });
  return cudaGetLastError();
}

cudaError_t launch_add_int(void* y, bool wide, int64_t v, const Indexer<1>& ix, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (wide)
    add_int_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<int64_t*>(y), v, ix, n);
  else
    add_int_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<int32_t*>(y), v, ix, n);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
