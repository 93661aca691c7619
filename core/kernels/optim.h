// Optimizer kernels: fused element-wise updates over a contiguous flat range of a ParamArena,
// and their multi-tensor forms (the *_runs kernels), which update a list of runs of the arena in
// one pass, each run with its own per-tensor values (the weight-decay flag, LARS's trust), so
// the flags are honoured without masks in memory. SGD, AdamW and LARS call the multi-tensor
// forms: one call per pass for the whole arena. Every implementation calls the functors of
// core/optim_functors.h.
//
// Per-tensor reductions (LARS norms, the DC-S3GD sums) write into small tensors on the operands'
// device, so on CUDA they stay on the device: the LARS update kernel reads its norms there and
// the host never waits. The reductions are deterministic on every backend (a fixed order for a
// given size and thread count). dplab has no f64 dtype: f64 results are stored bitwise in i64
// tensors ("f64 slots"; f64_slot_values reads them on the host).
#pragma once
#include <vector>
#include "dplab/core/optim_functors.h"

#include "dplab/core/tensor.h"

namespace dplab {

struct SgdStepArgs {
  float lr = 0.01f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;  // already masked: 0 for segments excluded from weight decay
  bool nesterov = false;
  bool first_step = false;  // momentum buffer is set to g rather than updated (PyTorch)
};

// LARS on one tensor (optim/lars.h). The trust ratio comes from the norms written by lars_norms.
struct LarsStepArgs {
  double lr = 0.1;
  float momentum = 0.f;
  double weight_decay = 0.0;  // already masked: 0 for segments excluded from weight decay
  double eta = 0.001;         // trust coefficient
  double eps = 0.0;
  bool excluded = false;    // trust = 1 (lars_excluded segments); norms are then not read
  bool first_step = false;  // momentum buffer is set to the first update (equal to mu * 0 + u)
};

// One AdamW step (optim/adamw.h) on one tensor: the hyper-parameters in double, as
// torch.optim.AdamW holds them; make_adamw_update rounds the per-step scalars once.
struct AdamWStepArgs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // already masked: 0 for segments excluded from weight decay
  int64_t step = 1;           // t, 1-based: the bias corrections' exponent
};

// DC-S3GD's λ for every tensor (comm/algorithms/dcs3gd.h), from the pass-1 sums.
struct Dcs3gdLambdaArgs {
  double lambda0 = 0.2;
  bool global = false;  // one λ from the sums over all tensors (else per tensor)
  bool correct = true;  // false: every λ is 0 (no correction this step)
};

// DC-S3GD pass 1 on one tensor (comm/algorithms/dcs3gd.h).
struct Dcs3gdAverageArgs {
  float ranks = 1.f;    // N
  bool have_r = false;  // R holds this iteration's sum: W̄ += R/N first
};

// A run of the flat buffers that a multi-tensor step updates: elements [offset, offset + numel),
// with the step's weight decay or (weight_decay false) none. An optimizer passes the runs of
// adjacent arena segments that share the weight-decay flag (ParamArena::decay_runs).
struct OptimRun {
  int64_t offset = 0;
  int64_t numel = 0;
  bool weight_decay = true;
  bool excluded = false;  // LARS only: trust 1 (a lars_excluded segment); a run is one tensor
};

struct OptimKernels {
  // One SGD step in place on param (and buf when momentum != 0). param, grad and buf are
  // contiguous f32 tensors with the same number of elements on the same device; buf may be
  // undefined when momentum == 0.
  void (*sgd_step)(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args);
  // sgd_step on every run of the flat buffers at once (multi-tensor): a run's elements take
  // sgd_step's update with args.weight_decay when run.weight_decay and 0 otherwise, bit for bit
  // what sgd_step does on that run alone; elements outside the runs are left as they are. One
  // pass: one parallel region on the CPU, one kernel launch (per 64 runs) on CUDA. Runs lie inside
  // the buffers and do not overlap (checked: check_optim_runs).
  //
  // skip_if (all three *_step_runs): undefined, or a contiguous f32 tensor of 1 to
  // kMaxSkipFlags elements on the operands' device. When any of its elements is non-zero the
  // step is not taken: param and the optimizer state are left as they are. Decided where the
  // flags live, so on CUDA the host never reads them (issue #34: nonfinite = skip with the
  // verdict read a step later, as a fused PyTorch optimizer takes GradScaler's found_inf).
  void (*sgd_step_runs)(Tensor& param, const Tensor& grad, Tensor& buf,
                        const std::vector<OptimRun>& runs, const SgdStepArgs& args,
                        const Tensor& skip_if);

  // One AdamW step in place on param, exp_avg (m) and exp_avg_sq (v): AdamWUpdate per element.
  // All four contiguous f32 with the same number of elements on one device.
  void (*adamw_step)(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const AdamWStepArgs& args);
  // adamw_step on every run at once, as sgd_step_runs does for sgd_step.
  void (*adamw_step_runs)(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                          const std::vector<OptimRun>& runs, const AdamWStepArgs& args,
                          const Tensor& skip_if);

  // norms[0] = ||param||, norms[1] = ||grad||: each sqrt of the sum of squares accumulated in
  // f64, rounded to f32 (exactly what the l2_norm op returns on the same backend). param and grad
  // contiguous f32 with the same numel; norms a contiguous f32 tensor of 2 elements, all on one
  // device.
  void (*lars_norms)(const Tensor& param, const Tensor& grad, Tensor& norms);
  // One LARS step in place: trust = lars_trust(norms[0], norms[1], ...) (1 when args.excluded),
  // then LarsUpdate per element. buf as for sgd_step (undefined when momentum == 0).
  void (*lars_step)(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
                    const LarsStepArgs& args);
  // The multi-tensor LARS step, each run one tensor: lars_norms of run i into norms[2i, 2i + 2)
  // (a contiguous f32 tensor of 2 per run; the same bits as lars_norms on the run alone; an
  // excluded run's pair is not computed and left as it is), then
  // lars_step on every run with its own norms, its weight decay (args.weight_decay when
  // run.weight_decay, else 0) and run.excluded for args.excluded. One call each: on CUDA two
  // launches for the norms and one for the update (per 64 runs), not three per tensor.
  void (*lars_norms_runs)(const Tensor& param, const Tensor& grad,
                          const std::vector<OptimRun>& runs, Tensor& norms);
  void (*lars_step_runs)(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
                         const std::vector<OptimRun>& runs, const LarsStepArgs& args,
                         const Tensor& skip_if);

  // DC-S3GD pass 1 over one tensor: W̄ += R/N when args.have_r (r ignored otherwise), D = W̄ − W,
  // and into the f64 slots sums[0..2]: Σg², Σ(g⊙g⊙D)², ΣD² (f64 accumulation). wbar, r, w, g
  // contiguous f32 of equal numel; sums a contiguous i64 tensor of 3 elements; one device.
  void (*dcs3gd_average)(Tensor& wbar, const Tensor& r, const Tensor& w, const Tensor& g,
                         const Dcs3gdAverageArgs& args, Tensor& sums);
  // DC-S3GD's λ (eq. 17) of `count` tensors on the device that holds their sums, so the update
  // never waits for the host: sums is the i64 tensor of 4 f64 slots per tensor (Σg², Σ(g⊙g⊙D)²
  // first, as dcs3gd_average writes them), lambdas a contiguous f32 tensor of `count` elements:
  // lambdas[j] = f32(dcs3gd_lambda(Σg²_j, Σ(g⊙g⊙D)²_j, λ0)), or with args.global the same λ for
  // all from the sums over j (added in j order); all 0 when !args.correct.
  void (*dcs3gd_lambda)(const Tensor& sums, const Dcs3gdLambdaArgs& args, Tensor& lambdas);
  // DC-S3GD pass 2 over one tensor: Dcs3gdUpdate per element (w, v, s in place), and ΣW̄² into
  // the f64 slot wbar_sq[0] (i64 tensor of 1 element). λ is lambda[0] when `lambda` is defined
  // (a 1-element f32 tensor on the operands' device, from dcs3gd_lambda), else up.lambda.
  void (*dcs3gd_update)(const Tensor& g, const Tensor& wbar, Tensor& w, Tensor& v, Tensor& s,
                        const Dcs3gdUpdate& up, Tensor& wbar_sq, const Tensor& lambda);
  // DC-S3GD drain over a whole range: W̄ += R/N, W = W̄.
  void (*dcs3gd_drain)(Tensor& wbar, const Tensor& r, Tensor& w, float ranks);

  // Dynamic loss scaling: grads *= inv_scale (AmpUnscale) and found_inf[0] = 1 when any element
  // was inf or NaN (left as it was otherwise: the caller zeroes it). grads contiguous f32;
  // found_inf a contiguous f32 tensor of 1 element on the same device.
  void (*amp_unscale)(Tensor& grads, float inv_scale, Tensor& found_inf);

  // Finiteness check (train/loop/nonfinite_guard.h): flags[slot] = 1 when any element of x is
  // inf or NaN (left as it was otherwise: the caller zeroes it). x contiguous f32, only read;
  // flags a contiguous f32 tensor on x's device with slot < flags.numel(). No host read: a
  // caller checks many tensors into one flags tensor and reads it back once.
  void (*find_nonfinite)(const Tensor& x, Tensor& flags, int64_t slot);
  // x = 0 when any element of `flags` is non-zero, x untouched otherwise (the gradients of a step
  // that skip_if dropped). x contiguous f32; flags as skip_if above, on x's device. On CUDA a
  // step that is not dropped costs one launch whose threads read the flags and return.
  void (*zero_if_flagged)(Tensor& x, const Tensor& flags);
};

// The most elements a skip_if / zero_if_flagged flags tensor may have.
constexpr int64_t kMaxSkipFlags = 8;
// Validates a skip_if tensor (undefined is allowed) for operands on `device`; throws naming `what`.
void check_skip_flags(const Tensor& skip_if, Device device, const char* what);
// The host backends' reading of skip_if: checked, then true when some element is non-zero.
bool host_skip_requested(const Tensor& skip_if, const char* what);

OptimKernels ref_optim_kernels();
OptimKernels cpu_optim_kernels();
OptimKernels cuda_optim_kernels();

// Validates the operands of sgd_step (every backend calls it first; core/cpu/ref/optim.cpp).
void check_sgd_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                        const SgdStepArgs& args);

// Runs of a multi-tensor step over flat buffers of n elements: each inside [0, n), none
// overlapping another; throws naming `what`, the run and the bounds.
void check_optim_runs(const std::vector<OptimRun>& runs, int64_t n, const char* what);

void check_adamw_operands(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, const AdamWStepArgs& args);

// Validation shared by every backend of the kernels above (core/cpu/ref/optim.cpp).
void check_lars_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                         const Tensor& norms, const LarsStepArgs& args);
void check_lars_norm_operands(const Tensor& param, const Tensor& grad, const Tensor& norms);
// The multi-tensor LARS kernels' param, grad, runs and norms (2 per run).
void check_lars_runs_operands(const Tensor& param, const Tensor& grad,
                              const std::vector<OptimRun>& runs, const Tensor& norms);
// lars_step_runs' operands: those above, and the momentum buffer as lars_step checks it.
void check_lars_step_runs_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                                   const Tensor& norms, const std::vector<OptimRun>& runs,
                                   const LarsStepArgs& args);
// lars_norms_runs on the host backends: checks the operands, then calls a backend's own
// single-tensor lars_norms `one` on each run that is not excluded (core/cpu/ref/optim.cpp).
void lars_norms_run_by_run(void (*one)(const Tensor&, const Tensor&, Tensor&), const Tensor& param,
                           const Tensor& grad, const std::vector<OptimRun>& runs, Tensor& norms);
void check_dcs3gd_average_operands(const Tensor& wbar, const Tensor& r, const Tensor& w,
                                   const Tensor& g, const Dcs3gdAverageArgs& args,
                                   const Tensor& sums);
void check_dcs3gd_update_operands(const Tensor& g, const Tensor& wbar, const Tensor& w,
                                  const Tensor& v, const Tensor& s, const Tensor& wbar_sq,
                                  const Tensor& lambda);
// Returns the number of tensors (lambdas.numel()).
int64_t check_dcs3gd_lambda_operands(const Tensor& sums, const Tensor& lambdas);
void check_dcs3gd_drain_operands(const Tensor& wbar, const Tensor& r, const Tensor& w);
void check_amp_unscale_operands(const Tensor& grads, const Tensor& found_inf);
void check_find_nonfinite_operands(const Tensor& x, const Tensor& flags, int64_t slot);

// The f64 values held bitwise in an i64 tensor of f64 slots (copied to the host if needed).
std::vector<double> f64_slot_values(const Tensor& slots);
// Writes a host f64 value into slot i of a host (cpu) i64 tensor.
void set_f64_slot(Tensor& slots, int64_t i, double v);

inline SgdUpdate make_sgd_update(const SgdStepArgs& a) {
  return SgdUpdate{a.lr, a.momentum, 1.f - a.dampening, a.weight_decay, a.nesterov, a.first_step};
}

inline AdamWUpdate make_adamw_update(const AdamWStepArgs& a) {
  return make_adamw_update(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step);
}

}  // namespace dplab
