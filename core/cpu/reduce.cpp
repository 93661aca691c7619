// Fast reductions for contiguous f32 inputs. A sum over any set of dims is first collapsed
// into runs of kept (K) and reduced (R) dims; the two patterns real models produce,
// [R0, K, R1] (per-channel sums of NCHW, full sums, row sums) and [K0, R, K1] (bias gradients
// of [N, F], sums over a middle dim), each get a loop nest whose inner loop is contiguous.
// Anything else goes through the reference kernel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "dplab/core/kernels/reduce.h"

namespace dplab {
namespace {

const ReduceKernels& spec() {
  static const ReduceKernels k = ref_reduce_kernels();
  return k;
}

constexpr int64_t kParallelMin = 32768;

inline double row_sum(const float* p, int64_t n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += p[i];
  return acc;
}

void sum(const Tensor& x, Tensor& y, float scale) {
  if (!(x.is_contiguous() && y.is_contiguous() && x.dtype() == DType::f32 &&
        y.dtype() == DType::f32 && x.dim() == y.dim()))
    return spec().sum(x, y, scale);
  struct Run {
    int64_t size;
    bool reduced;
  };
  std::vector<Run> runs;
  for (int d = 0; d < x.dim(); ++d) {
    const int64_t n = x.shape()[d];
    if (y.shape()[d] != n && y.shape()[d] != 1) return spec().sum(x, y, scale);  // ref reports
    if (n == 1) continue;
    const bool red = y.shape()[d] == 1;
    if (!runs.empty() && runs.back().reduced == red)
      runs.back().size *= n;
    else
      runs.push_back({n, red});
  }
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const int64_t n = x.numel();
  if (n == 0) {
    std::fill(yp, yp + y.numel(), 0.f);
    return;
  }
  if (runs.size() > 3) return spec().sum(x, y, scale);
  if (runs.empty() || !runs.back().reduced) {
    // [K0, R, K1]: y[k0, :] = sum_r x[k0, r, :]
    while (runs.size() < 3) runs.insert(runs.begin(), {1, runs.size() == 1});
    const int64_t k0n = runs[0].size, rn = runs[1].size, k1n = runs[2].size;
    if (rn == 1) {  // nothing reduced: a scaled copy
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) yp[i] = scale * xp[i];
      return;
    }
    // Parallel over k0 when there are enough rows, else over column blocks of k1.
    const int64_t cols = k0n > 1 ? k1n : std::min<int64_t>(k1n, 1024);
    const int64_t col_blocks = (k1n + cols - 1) / cols;
    const int64_t tasks = k0n * col_blocks;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t k0 = t / col_blocks, c0 = (t % col_blocks) * cols;
      const int64_t len = std::min(cols, k1n - c0);
      float* yr = yp + k0 * k1n + c0;
      const float* xr = xp + k0 * rn * k1n + c0;
      std::fill(yr, yr + len, 0.f);
      for (int64_t r = 0; r < rn; ++r) {
        const float* xrow = xr + r * k1n;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) yr[i] += xrow[i];
      }
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) yr[i] *= scale;
    }
    return;
  }
  // [R0, K, R1]: y[k] = sum_{r0, r1} x[r0, k, r1]
  while (runs.size() < 3) runs.insert(runs.begin(), {1, runs.size() == 2});
  const int64_t r0n = runs[0].size, kn = runs[1].size, r1n = runs[2].size;
  if (kn == 1) {  // everything reduced
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) acc += xp[i];
    yp[0] = static_cast<float>(scale * acc);
    return;
  }
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < kn; ++k) {
    double acc = 0;
    for (int64_t r0 = 0; r0 < r0n; ++r0) acc += row_sum(xp + (r0 * kn + k) * r1n, r1n);
    yp[k] = static_cast<float>(scale * acc);
  }
}

void argmax(const Tensor& x, int dim, Tensor& out) {
  if (!(x.is_contiguous() && out.is_contiguous() && x.dtype() == DType::f32 &&
        out.dtype() == DType::i64 && dim >= 0 && dim < x.dim() && x.shape()[dim] > 0))
    return spec().argmax(x, dim, out);
  Shape expect = x.shape();
  expect[dim] = 1;
  check_shape(out, expect, "argmax output");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  const int64_t len = x.shape()[dim];
  const float* xp = x.data<float>();
  int64_t* op = out.data<int64_t>();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelMin)
  for (int64_t t = 0; t < outer * inner; ++t) {
    const int64_t o = t / inner, i = t % inner;
    const float* p = xp + o * len * inner + i;
    int64_t best_i = 0;
    float best = p[0];
    for (int64_t k = 1; k < len && best == best; ++k) {
      const float v = p[k * inner];
      if (v > best || v != v) {
        best = v;
        best_i = k;
      }
    }
    op[t] = best_i;
  }
}

double sum_of_squares(const Tensor& x) {
  if (!(x.is_contiguous() && x.dtype() == DType::f32)) return spec().sum_of_squares(x);
  const float* p = x.data<float>();
  const int64_t n = x.numel();
  double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]) * p[i];
  return acc;
}

}  // namespace

ReduceKernels cpu_reduce_kernels() {
  ReduceKernels k{};
  k.sum = sum;
  k.argmax = argmax;
  k.sum_of_squares = sum_of_squares;
  return k;
}

}  // namespace dplab
