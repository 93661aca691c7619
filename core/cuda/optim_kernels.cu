// CUDA optimizer kernels. Every element goes through the functors of core/optim_functors.h, the
// same ones the ref and OpenMP loops call, so a step does the CPU path's f32 arithmetic. The
// per-tensor reductions (LARS norms, DC-S3GD sums) accumulate in f64 and are deterministic: see
// launch_optim.h. Their results stay in device memory.
#include "dplab/core/cuda/launch_optim.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = kOptimThreads;
static_assert((kThreads & (kThreads - 1)) == 0, "the tree reductions need a power of two");

inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : (b < 1 ? 1 : b));
}

// Sums acc[k] over the block in a fixed tree order; thread 0 writes the K totals to out[0..K).
template <int K>
__device__ void block_sum(double (&acc)[K], double* out) {
  __shared__ double sh[K][kThreads];
  const int t = threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k) sh[k][t] = acc[k];
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (t < s) {
#pragma unroll
      for (int k = 0; k < K; ++k) sh[k][t] += sh[k][t + s];
    }
    __syncthreads();
  }
  if (t == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) out[k] = sh[k][0];
  }
}

// Second reduction launch (one block): out[k] = Σ_b partials[b * K + k], in a fixed order.
// With sqrt_to_f32, writes f32(sqrt(total)) to out_f32 instead (the LARS norms).
template <int K>
__device__ void finish_sum_block(const double* partials, int blocks, double* out, float* out_f32) {
  double acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = 0.0;
  for (int b = threadIdx.x; b < blocks; b += kThreads) {
#pragma unroll
    for (int k = 0; k < K; ++k) acc[k] += partials[b * K + k];
  }
  __shared__ double total[K];
  block_sum<K>(acc, total);
  __syncthreads();
  if (threadIdx.x < K) {
    const double v = total[threadIdx.x];
    if (out_f32 != nullptr)
      out_f32[threadIdx.x] = static_cast<float>(sqrt(v));
    else
      out[threadIdx.x] = v;
  }
}

template <int K>
__global__ void finish_sum_kernel(const double* partials, int blocks, double* out, float* out_f32) {
  finish_sum_block<K>(partials, blocks, out, out_f32);
}

template <int K>
cudaError_t finish_sum(const double* partials, int blocks, double* out, float* out_f32,
                       cudaStream_t stream) {
  finish_sum_kernel<K><<<1, kThreads, 0, stream>>>(partials, blocks, out, out_f32);
  return cudaGetLastError();
}

__global__ void sgd_kernel(float* p, const float* g, float* buf, int64_t n, SgdUpdate f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + i, g[i], buf != nullptr ? buf + i : nullptr);
}

// Whether one of the flags is set: every thread reads them (a few floats, from cache), so a
// skipped step is decided on the device without a host read.
__device__ bool any_flag(const float* flags, int count) {
  for (int i = 0; i < count; ++i)
    if (flags[i] != 0.f) return true;
  return false;
}

// Multi-tensor steps: block row blockIdx.y takes run y of the batch, its blocks stride over the
// run's elements (the blocks of a shorter run that find nothing to do return at once).
__global__ void sgd_runs_kernel(float* p, const float* g, float* buf, OptimRunBatch runs,
                                SgdUpdate decayed, SgdUpdate undecayed) {
  if (any_flag(runs.skip, runs.skip_count)) return;  // a dropped step
  const int r = blockIdx.y;
  const int64_t off = runs.offset[r], n = runs.numel[r];
  const SgdUpdate f = runs.decay[r] ? decayed : undecayed;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + off + i, g[off + i], buf != nullptr ? buf + off + i : nullptr);
}

__global__ void adamw_runs_kernel(float* p, const float* g, float* m, float* v, OptimRunBatch runs,
                                  AdamWUpdate decayed, AdamWUpdate undecayed) {
  if (any_flag(runs.skip, runs.skip_count)) return;  // a dropped step
  const int r = blockIdx.y;
  const int64_t off = runs.offset[r], n = runs.numel[r];
  const AdamWUpdate f = runs.decay[r] ? decayed : undecayed;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + off + i, g[off + i], m + off + i, v + off + i);
}

// The grid of a run batch: as many blocks per row as its longest run needs, at most 4096 (the
// blocks then stride), and one row per run.
dim3 runs_grid(const OptimRunBatch& runs) {
  int64_t longest = 0;
  for (int r = 0; r < runs.count; ++r) longest = runs.numel[r] > longest ? runs.numel[r] : longest;
  const int x = blocks_for(longest);
  return dim3(static_cast<unsigned>(x > 4096 ? 4096 : x), static_cast<unsigned>(runs.count));
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n,
                             AdamWUpdate f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + i, g[i], m + i, v + i);
}

__global__ void lars_norms_kernel(const float* p, const float* g, int64_t n, double* partials) {
  double acc[2] = {0.0, 0.0};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double pv = p[i], gv = g[i];
    acc[0] += pv * pv;
    acc[1] += gv * gv;
  }
  block_sum<2>(acc, partials + 2 * blockIdx.x);
}

__global__ void lars_step_kernel(float* p, const float* g, float* buf, const float* norms,
                                 int64_t n, double lr, float momentum, double wd, double eta,
                                 double eps, bool excluded, bool first_step) {
  // Every thread derives the same trust from the two device-resident norms (no host round trip).
  const double trust = excluded ? 1.0 : lars_trust(norms[0], norms[1], eta, wd, eps);
  const LarsUpdate f = make_lars_update(lr, trust, momentum, wd, first_step);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + i, g[i], buf != nullptr ? buf + i : nullptr);
}

// Multi-tensor LARS. Norms: block (x, y) is block x of run y's own reduction grid (the grid
// lars_norms would launch for the run alone: optim_reduce_blocks(numel) blocks, the others
// return), so every run's partials, and its norms, have the single-tensor kernels' bits.
__global__ void lars_norms_runs_kernel(const float* p, const float* g, OptimRunBatch runs,
                                       RunPartials parts, double* partials) {
  const int r = blockIdx.y;
  const int blocks = parts.blocks[r];
  if (static_cast<int>(blockIdx.x) >= blocks) return;  // the whole block: no barrier is split
  const int64_t off = runs.offset[r], n = runs.numel[r];
  double acc[2] = {0.0, 0.0};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blocks) * blockDim.x) {
    const double pv = p[off + i], gv = g[off + i];
    acc[0] += pv * pv;
    acc[1] += gv * gv;
  }
  block_sum<2>(acc, partials + parts.offset[r] + 2 * blockIdx.x);
}

// One block per run: its norms from its partials, as finish_sum<2> does for one tensor.
__global__ void lars_finish_runs_kernel(const double* partials, RunPartials parts, float* norms) {
  const int r = blockIdx.x;
  if (parts.blocks[r] == 0) return;  // an excluded run: its norms are left as they are
  finish_sum_block<2>(partials + parts.offset[r], parts.blocks[r], nullptr, norms + 2 * r);
}

__global__ void lars_runs_kernel(float* p, const float* g, float* buf, const float* norms,
                                 OptimRunBatch runs, double lr, float momentum, double wd,
                                 double eta, double eps, bool first_step) {
  if (any_flag(runs.skip, runs.skip_count)) return;  // a dropped step
  const int r = blockIdx.y;
  const int64_t off = runs.offset[r], n = runs.numel[r];
  const double run_wd = runs.decay[r] ? wd : 0.0;
  const double trust =
      runs.excluded[r] ? 1.0 : lars_trust(norms[2 * r], norms[2 * r + 1], eta, run_wd, eps);
  const LarsUpdate f = make_lars_update(lr, trust, momentum, run_wd, first_step);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(p + off + i, g[off + i], buf != nullptr ? buf + off + i : nullptr);
}

__global__ void dcs3gd_average_kernel(float* wbar, const float* r, const float* w, const float* g,
                                      int64_t n, Dcs3gdAverage avg, bool have_r, double* partials) {
  const Dcs3gdNormTerms terms;
  double acc[3] = {0.0, 0.0, 0.0};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float wb = wbar[i];
    const float d = have_r ? avg(wb, r[i], w[i]) : wb - w[i];
    if (have_r) wbar[i] = wb;
    terms(g[i], d, acc[0], acc[1]);
    acc[2] += double(d) * d;
  }
  block_sum<3>(acc, partials + 3 * blockIdx.x);
}

__global__ void dcs3gd_update_kernel(const float* g, const float* wbar, float* w, float* v,
                                     float* s, int64_t n, Dcs3gdUpdate up, const float* lambda,
                                     double* partials) {
  if (lambda != nullptr) up.lambda = *lambda;  // λ from dcs3gd_lambda, never via the host
  double acc[1] = {0.0};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float wb = wbar[i];
    float wi = w[i], vi = v[i], si = s[i];
    up(g[i], wb, wi, vi, si);
    w[i] = wi;
    v[i] = vi;
    s[i] = si;
    acc[0] += double(wb) * wb;
  }
  block_sum<1>(acc, partials + blockIdx.x);
}

// ref's dcs3gd_lambda loop, statement by statement, on one thread.
__global__ void dcs3gd_lambda_kernel(const double* sums, int64_t count, double lambda0, bool global,
                                     bool correct, float* lambdas) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  if (!correct) {
    for (int64_t j = 0; j < count; ++j) lambdas[j] = 0.f;
    return;
  }
  if (global) {
    double g2 = 0, c2 = 0;
    for (int64_t j = 0; j < count; ++j) {
      g2 += sums[4 * j];
      c2 += sums[4 * j + 1];
    }
    const float l = static_cast<float>(dcs3gd_lambda_value(g2, c2, lambda0));
    for (int64_t j = 0; j < count; ++j) lambdas[j] = l;
    return;
  }
  for (int64_t j = 0; j < count; ++j)
    lambdas[j] = static_cast<float>(dcs3gd_lambda_value(sums[4 * j], sums[4 * j + 1], lambda0));
}

__global__ void dcs3gd_drain_kernel(float* wbar, const float* r, float* w, int64_t n,
                                    Dcs3gdAverage avg) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float wb = wbar[i];
    avg(wb, r[i], w[i]);
    wbar[i] = wb;
    w[i] = wb;
  }
}

__global__ void amp_unscale_kernel(float* g, int64_t n, AmpUnscale f, float* found_inf) {
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad = f(g[i]) || bad;
  if (bad) *found_inf = 1.f;
}

__global__ void zero_if_flagged_kernel(float* x, int64_t n, const float* flags, int flag_count) {
  if (!any_flag(flags, flag_count)) return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = 0.f;
}

__global__ void find_nonfinite_kernel(const float* x, int64_t n, float* flag) {
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    bad = nonfinite_value(x[i]) || bad;
  if (bad) *flag = 1.f;
}

}  // namespace

cudaError_t launch_amp_unscale(float* g, int64_t n, float inv_scale, float* found_inf,
                               cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  amp_unscale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, n, AmpUnscale{inv_scale},
                                                             found_inf);
  return cudaGetLastError();
}

cudaError_t launch_zero_if_flagged(float* x, int64_t n, const float* flags, int flag_count,
                                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  zero_if_flagged_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, flags, flag_count);
  return cudaGetLastError();
}

cudaError_t launch_find_nonfinite(const float* x, int64_t n, float* flag, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  find_nonfinite_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, flag);
  return cudaGetLastError();
}

cudaError_t launch_adamw_step(float* p, const float* g, float* m, float* v, int64_t n,
                              AdamWUpdate f, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  adamw_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, m, v, n, f);
  return cudaGetLastError();
}

cudaError_t launch_sgd_step_runs(float* p, const float* g, float* buf, const OptimRunBatch& runs,
                                 SgdUpdate decayed, SgdUpdate undecayed, cudaStream_t stream) {
  if (runs.count == 0) return cudaSuccess;
  sgd_runs_kernel<<<runs_grid(runs), kThreads, 0, stream>>>(p, g, buf, runs, decayed, undecayed);
  return cudaGetLastError();
}

cudaError_t launch_adamw_step_runs(float* p, const float* g, float* m, float* v,
                                   const OptimRunBatch& runs, AdamWUpdate decayed,
                                   AdamWUpdate undecayed, cudaStream_t stream) {
  if (runs.count == 0) return cudaSuccess;
  adamw_runs_kernel<<<runs_grid(runs), kThreads, 0, stream>>>(p, g, m, v, runs, decayed, undecayed);
  return cudaGetLastError();
}

cudaError_t launch_sgd_step(float* p, const float* g, float* buf, int64_t n, SgdUpdate f,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, buf, n, f);
  return cudaGetLastError();
}

cudaError_t launch_lars_norms(const float* p, const float* g, int64_t n, double* partials,
                              float* norms, cudaStream_t stream) {
  const int blocks = optim_reduce_blocks(n);
  lars_norms_kernel<<<blocks, kThreads, 0, stream>>>(p, g, n, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return finish_sum<2>(partials, blocks, nullptr, norms, stream);
}

cudaError_t launch_lars_norms_runs(const float* p, const float* g, const OptimRunBatch& runs,
                                   const RunPartials& parts, double* partials, float* norms,
                                   cudaStream_t stream) {
  if (runs.count == 0) return cudaSuccess;
  int widest = 1;  // at least one block per row, even when every run is excluded
  for (int r = 0; r < runs.count; ++r) widest = parts.blocks[r] > widest ? parts.blocks[r] : widest;
  lars_norms_runs_kernel<<<dim3(static_cast<unsigned>(widest), static_cast<unsigned>(runs.count)),
                           kThreads, 0, stream>>>(p, g, runs, parts, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  lars_finish_runs_kernel<<<runs.count, kThreads, 0, stream>>>(partials, parts, norms);
  return cudaGetLastError();
}

cudaError_t launch_lars_step_runs(float* p, const float* g, float* buf, const float* norms,
                                  const OptimRunBatch& runs, double lr, float momentum,
                                  double weight_decay, double eta, double eps, bool first_step,
                                  cudaStream_t stream) {
  if (runs.count == 0) return cudaSuccess;
  lars_runs_kernel<<<runs_grid(runs), kThreads, 0, stream>>>(p, g, buf, norms, runs, lr, momentum,
                                                             weight_decay, eta, eps, first_step);
  return cudaGetLastError();
}

cudaError_t launch_lars_step(float* p, const float* g, float* buf, const float* norms, int64_t n,
                             double lr, float momentum, double weight_decay, double eta, double eps,
                             bool excluded, bool first_step, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  lars_step_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      p, g, buf, norms, n, lr, momentum, weight_decay, eta, eps, excluded, first_step);
  return cudaGetLastError();
}

cudaError_t launch_dcs3gd_average(float* wbar, const float* r, const float* w, const float* g,
                                  int64_t n, float ranks, bool have_r, double* partials,
                                  double* sums, cudaStream_t stream) {
  const int blocks = optim_reduce_blocks(n);
  dcs3gd_average_kernel<<<blocks, kThreads, 0, stream>>>(wbar, r, w, g, n, Dcs3gdAverage{ranks},
                                                         have_r, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return finish_sum<3>(partials, blocks, sums, nullptr, stream);
}

cudaError_t launch_dcs3gd_update(const float* g, const float* wbar, float* w, float* v, float* s,
                                 int64_t n, Dcs3gdUpdate up, const float* lambda, double* partials,
                                 double* wbar_sq, cudaStream_t stream) {
  const int blocks = optim_reduce_blocks(n);
  dcs3gd_update_kernel<<<blocks, kThreads, 0, stream>>>(g, wbar, w, v, s, n, up, lambda, partials);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return finish_sum<1>(partials, blocks, wbar_sq, nullptr, stream);
}

cudaError_t launch_dcs3gd_lambda(const double* sums, int64_t count, double lambda0, bool global,
                                 bool correct, float* lambdas, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  dcs3gd_lambda_kernel<<<1, 1, 0, stream>>>(sums, count, lambda0, global, correct, lambdas);
  return cudaGetLastError();
}

cudaError_t launch_dcs3gd_drain(float* wbar, const float* r, float* w, int64_t n, float ranks,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dcs3gd_drain_kernel<<<blocks_for(n), kThreads, 0, stream>>>(wbar, r, w, n, Dcs3gdAverage{ranks});
  return cudaGetLastError();
}

}  // namespace dplab::cuda
