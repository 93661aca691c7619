// Launchers of the CUDA optimizer kernels (core/cuda/optim_kernels.cu); the wrapper
// core/cuda/optim.cpp validates tensors, picks the stream and checks every returned error.
// Reductions are two launches: a fixed grid (optim_reduce_blocks(n) blocks, a function of n
// only) writes one f64 partial per block and quantity into `partials`, then one block sums the
// partials in a fixed tree order. So a result depends on n alone, never on scheduling:
// deterministic from run to run, and it never leaves the device.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/optim_functors.h"

namespace dplab::cuda {

constexpr int kOptimThreads = 256;
constexpr int kOptimMaxReduceBlocks = 1024;

// Blocks of the first reduction launch for n elements (size `partials` as blocks * quantities).
inline int optim_reduce_blocks(int64_t n) {
  const int64_t b = (n + kOptimThreads - 1) / kOptimThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kOptimMaxReduceBlocks ? kOptimMaxReduceBlocks : b));
}

cudaError_t launch_sgd_step(float* p, const float* g, float* buf, int64_t n, SgdUpdate f,
                            cudaStream_t stream);

// Up to kMaxOptimRunsPerLaunch runs of a multi-tensor step, passed to the kernel by value (in
// its parameters: no table in device memory, nothing to copy or free). Block row y of the grid
// takes run y.
constexpr int kMaxOptimRunsPerLaunch = 64;
struct OptimRunBatch {
  int count = 0;
  int64_t offset[kMaxOptimRunsPerLaunch] = {};
  int64_t numel[kMaxOptimRunsPerLaunch] = {};
  bool decay[kMaxOptimRunsPerLaunch] = {};
  bool excluded[kMaxOptimRunsPerLaunch] = {};  // LARS: trust 1
  // The step's skip flags (OptimKernels' skip_if): when one of skip[0, skip_count) is non-zero
  // the update kernels return before touching anything. Null: never skipped.
  const float* skip = nullptr;
  int skip_count = 0;
};
// Where run y's reduction partials go: `blocks[y]` = optim_reduce_blocks(numel[y]) blocks of 2
// quantities from partials[offset[y]] on; 0 blocks for an excluded run (norms not computed).
struct RunPartials {
  int64_t offset[kMaxOptimRunsPerLaunch] = {};
  int blocks[kMaxOptimRunsPerLaunch] = {};
};
// sgd_step_runs over one batch: run y's elements take `decayed` when decay[y], else `undecayed`.
cudaError_t launch_sgd_step_runs(float* p, const float* g, float* buf, const OptimRunBatch& runs,
                                 SgdUpdate decayed, SgdUpdate undecayed, cudaStream_t stream);
cudaError_t launch_adamw_step_runs(float* p, const float* g, float* m, float* v,
                                   const OptimRunBatch& runs, AdamWUpdate decayed,
                                   AdamWUpdate undecayed, cudaStream_t stream);

cudaError_t launch_adamw_step(float* p, const float* g, float* m, float* v, int64_t n,
                              AdamWUpdate f, cudaStream_t stream);

// norms[0] = f32(sqrt(Σp²)), norms[1] = f32(sqrt(Σg²)); partials: 2 * optim_reduce_blocks(n).
cudaError_t launch_lars_norms(const float* p, const float* g, int64_t n, double* partials,
                              float* norms, cudaStream_t stream);
// The multi-tensor LARS kernels over one batch: norms[2y, 2y + 2) for run y (norms points at
// the batch's first run's pair), with the bits of launch_lars_norms on the run alone; then the
// update of every run with its own trust (weight_decay where decay[y], trust 1 where
// excluded[y]).
cudaError_t launch_lars_norms_runs(const float* p, const float* g, const OptimRunBatch& runs,
                                   const RunPartials& parts, double* partials, float* norms,
                                   cudaStream_t stream);
cudaError_t launch_lars_step_runs(float* p, const float* g, float* buf, const float* norms,
                                  const OptimRunBatch& runs, double lr, float momentum,
                                  double weight_decay, double eta, double eps, bool first_step,
                                  cudaStream_t stream);
// norms may be null when excluded (trust 1). buf null when momentum == 0.
cudaError_t launch_lars_step(float* p, const float* g, float* buf, const float* norms, int64_t n,
                             double lr, float momentum, double weight_decay, double eta, double eps,
                             bool excluded, bool first_step, cudaStream_t stream);

// r may be null when !have_r. sums[0..2] = Σg², Σ(g⊙g⊙D)², ΣD²; partials: 3 * blocks.
cudaError_t launch_dcs3gd_average(float* wbar, const float* r, const float* w, const float* g,
                                  int64_t n, float ranks, bool have_r, double* partials,
                                  double* sums, cudaStream_t stream);
// wbar_sq[0] = ΣW̄²; partials: optim_reduce_blocks(n).
cudaError_t launch_dcs3gd_update(const float* g, const float* wbar, float* w, float* v, float* s,
                                 int64_t n, Dcs3gdUpdate up, const float* lambda, double* partials,
                                 double* wbar_sq, cudaStream_t stream);
// lambdas[j] for j < count from the f64 sums (4 per tensor), as ref's dcs3gd_lambda (one thread:
// a few hundred scalars, in ref's order).
cudaError_t launch_dcs3gd_lambda(const double* sums, int64_t count, double lambda0, bool global,
                                 bool correct, float* lambdas, cudaStream_t stream);
cudaError_t launch_dcs3gd_drain(float* wbar, const float* r, float* w, int64_t n, float ranks,
                                cudaStream_t stream);

// g *= inv_scale; found_inf[0] = 1 when any g was inf/NaN (every such thread stores the same
// 1.0f, so the outcome does not depend on which one wins).
cudaError_t launch_amp_unscale(float* g, int64_t n, float inv_scale, float* found_inf,
                               cudaStream_t stream);
// x[0, n) = 0 when one of flags[0, flag_count) is non-zero; otherwise every thread returns.
cudaError_t launch_zero_if_flagged(float* x, int64_t n, const float* flags, int flag_count,
                                   cudaStream_t stream);
// *flag = 1 when any x[i] is inf or NaN (x only read; every such thread stores the same 1.0f).
cudaError_t launch_find_nonfinite(const float* x, int64_t n, float* flag, cudaStream_t stream);

}  // namespace dplab::cuda
