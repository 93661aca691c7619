// Fast optimizer kernels: the shared functors in OpenMP loops over the flat range. The
// reductions are OpenMP reductions with a static schedule, deterministic for a given thread
// count; LARS norms are the cpu reduce family's sum_of_squares itself, so they equal the l2_norm
// op's bits.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "dplab/core/kernels/optim.h"
#include "dplab/core/kernels/reduce.h"

namespace dplab {
namespace {

// Ranges with at least this many elements use OpenMP in the DC-S3GD loops (the threshold the
// algorithm's own loops used, so its results are unchanged).
constexpr int64_t kDcs3gdParallelMin = int64_t(1) << 15;

void sgd_step(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args) {
  check_sgd_operands(param, grad, buf, args);
  const SgdUpdate f = make_sgd_update(args);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  const int64_t n = param.numel();
  if (args.momentum != 0.f) {
    float* b = buf.data<float>();
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b + i);
  } else {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], nullptr);
  }
}

// The multi-tensor steps' one parallel region: the runs' elements, taken as one concatenated
// sequence, split evenly among the threads (thread t of nt: [T t / nt, T (t + 1) / nt) of the T
// elements); f(run, begin, end) updates elements [begin, end) of the buffers, inside `run`.
// Element-wise updates, so the split changes no bit of the result.
template <typename F>
void for_run_elements(const std::vector<OptimRun>& runs, F f) {
  int64_t total = 0;
  for (const OptimRun& r : runs) total += r.numel;
  auto share = [&](int64_t lo, int64_t hi) {
    int64_t start = 0;  // the current run's first element in the concatenation
    for (const OptimRun& r : runs) {
      if (start >= hi) break;
      const int64_t a = std::max(lo, start), b = std::min(hi, start + r.numel);
      if (a < b) f(r, r.offset + (a - start), r.offset + (b - start));
      start += r.numel;
    }
  };
  if (total <= 65536) return share(0, total);  // the single-tensor kernels' threshold
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    share(total * t / nt, total * (t + 1) / nt);
  }
}

// f on elements [i0, i1) of p, g and (when not null) the momentum buffer b: SGD's and LARS's
// element loop.
template <typename F>
void momentum_update(const F& f, float* p, const float* g, float* b, int64_t i0, int64_t i1) {
  if (b != nullptr) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) f(p + i, g[i], b + i);
  } else {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) f(p + i, g[i], nullptr);
  }
}

void sgd_step_runs(Tensor& param, const Tensor& grad, Tensor& buf,
                   const std::vector<OptimRun>& runs, const SgdStepArgs& args,
                   const Tensor& skip_if) {
  check_sgd_operands(param, grad, buf, args);
  check_optim_runs(runs, param.numel(), "sgd_step_runs");
  if (host_skip_requested(skip_if, "sgd_step_runs")) return;
  SgdStepArgs plain = args;
  plain.weight_decay = 0.f;
  const SgdUpdate decayed = make_sgd_update(args), undecayed = make_sgd_update(plain);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  for_run_elements(runs, [&](const OptimRun& r, int64_t i0, int64_t i1) {
    momentum_update(r.weight_decay ? decayed : undecayed, p, g, b, i0, i1);
  });
}

void adamw_step_runs(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const std::vector<OptimRun>& runs, const AdamWStepArgs& args,
                     const Tensor& skip_if) {
  check_adamw_operands(param, grad, exp_avg, exp_avg_sq, args);
  check_optim_runs(runs, param.numel(), "adamw_step_runs");
  if (host_skip_requested(skip_if, "adamw_step_runs")) return;
  AdamWStepArgs plain = args;
  plain.weight_decay = 0.0;
  const AdamWUpdate decayed = make_adamw_update(args), undecayed = make_adamw_update(plain);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* m = exp_avg.data<float>();
  float* v = exp_avg_sq.data<float>();
  for_run_elements(runs, [&](const OptimRun& r, int64_t i0, int64_t i1) {
    const AdamWUpdate f = r.weight_decay ? decayed : undecayed;
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) f(p + i, g[i], m + i, v + i);
  });
}

void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const AdamWStepArgs& args) {
  check_adamw_operands(param, grad, exp_avg, exp_avg_sq, args);
  const AdamWUpdate f = make_adamw_update(args);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* m = exp_avg.data<float>();
  float* v = exp_avg_sq.data<float>();
  const int64_t n = param.numel();
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) f(p + i, g[i], m + i, v + i);
}

void lars_norms(const Tensor& param, const Tensor& grad, Tensor& norms) {
  check_lars_norm_operands(param, grad, norms);
  static const ReduceKernels reduce = cpu_reduce_kernels();
  float* out = norms.data<float>();
  out[0] = static_cast<float>(std::sqrt(reduce.sum_of_squares(param)));
  out[1] = static_cast<float>(std::sqrt(reduce.sum_of_squares(grad)));
}

void lars_step(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
               const LarsStepArgs& args) {
  check_lars_operands(param, grad, buf, norms, args);
  double trust = 1.0;
  if (!args.excluded) {
    const float* nm = norms.data<float>();
    trust = lars_trust(nm[0], nm[1], args.eta, args.weight_decay, args.eps);
  }
  const LarsUpdate f =
      make_lars_update(args.lr, trust, args.momentum, args.weight_decay, args.first_step);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  const int64_t n = param.numel();
  if (args.momentum != 0.f) {
    float* b = buf.data<float>();
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b + i);
  } else {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) f(p + i, g[i], nullptr);
  }
}

// The norms per run are lars_norms' own reductions, run by run (so they keep the l2_norm op's
// bits); the update is one parallel region over every run.
void lars_norms_runs(const Tensor& param, const Tensor& grad, const std::vector<OptimRun>& runs,
                     Tensor& norms) {
  lars_norms_run_by_run(lars_norms, param, grad, runs, norms);
}

void lars_step_runs(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
                    const std::vector<OptimRun>& runs, const LarsStepArgs& args,
                    const Tensor& skip_if) {
  check_lars_step_runs_operands(param, grad, buf, norms, runs, args);
  if (host_skip_requested(skip_if, "lars_step_runs")) return;
  const float* nm = norms.data<float>();
  std::vector<LarsUpdate> update;  // run i's, from its own trust and weight decay
  update.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const double wd = runs[i].weight_decay ? args.weight_decay : 0.0;
    const double trust =
        runs[i].excluded ? 1.0 : lars_trust(nm[2 * i], nm[2 * i + 1], args.eta, wd, args.eps);
    update.push_back(make_lars_update(args.lr, trust, args.momentum, wd, args.first_step));
  }
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  for_run_elements(runs, [&](const OptimRun& r, int64_t i0, int64_t i1) {
    momentum_update(update[size_t(&r - runs.data())], p, g, b, i0, i1);
  });
}

void dcs3gd_average(Tensor& wbar, const Tensor& r, const Tensor& w, const Tensor& g,
                    const Dcs3gdAverageArgs& args, Tensor& sums) {
  check_dcs3gd_average_operands(wbar, r, w, g, args, sums);
  const Dcs3gdAverage avg{args.ranks};
  const Dcs3gdNormTerms terms;
  float* wb = wbar.data<float>();
  const float* rp = args.have_r ? r.data<float>() : nullptr;
  const float* wp = w.data<float>();
  const float* gp = g.data<float>();
  const bool have_r = args.have_r;
  double g2 = 0, c2 = 0, d2 = 0;
  const int64_t n = wbar.numel();
#pragma omp parallel for reduction(+ : g2, c2, d2) if (n >= kDcs3gdParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float d = have_r ? avg(wb[i], rp[i], wp[i]) : wb[i] - wp[i];
    terms(gp[i], d, g2, c2);
    d2 += double(d) * d;
  }
  set_f64_slot(sums, 0, g2);
  set_f64_slot(sums, 1, c2);
  set_f64_slot(sums, 2, d2);
}

void dcs3gd_update(const Tensor& g, const Tensor& wbar, Tensor& w, Tensor& v, Tensor& s,
                   const Dcs3gdUpdate& up_in, Tensor& wbar_sq, const Tensor& lambda) {
  check_dcs3gd_update_operands(g, wbar, w, v, s, wbar_sq, lambda);
  Dcs3gdUpdate up = up_in;
  if (lambda.defined()) up.lambda = lambda.data<float>()[0];
  const float* gp = g.data<float>();
  const float* wb = wbar.data<float>();
  float* wp = w.data<float>();
  float* vp = v.data<float>();
  float* sp = s.data<float>();
  double n2 = 0;
  const int64_t n = wbar.numel();
#pragma omp parallel for reduction(+ : n2) if (n >= kDcs3gdParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    up(gp[i], wb[i], wp[i], vp[i], sp[i]);
    n2 += double(wb[i]) * wb[i];
  }
  set_f64_slot(wbar_sq, 0, n2);
}

void dcs3gd_drain(Tensor& wbar, const Tensor& r, Tensor& w, float ranks) {
  check_dcs3gd_drain_operands(wbar, r, w);
  const Dcs3gdAverage avg{ranks};
  float* wb = wbar.data<float>();
  const float* rp = r.data<float>();
  float* wp = w.data<float>();
  const int64_t n = wbar.numel();
#pragma omp parallel for if (n >= kDcs3gdParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    avg(wb[i], rp[i], wp[i]);
    wp[i] = wb[i];
  }
}

void amp_unscale(Tensor& grads, float inv_scale, Tensor& found_inf) {
  check_amp_unscale_operands(grads, found_inf);
  const AmpUnscale f{inv_scale};
  float* g = grads.data<float>();
  int bad = 0;
  const int64_t n = grads.numel();
#pragma omp parallel for simd schedule(static) reduction(| : bad) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) bad |= f(g[i]) ? 1 : 0;
  if (bad) found_inf.data<float>()[0] = 1.f;
}

void find_nonfinite(const Tensor& x, Tensor& flags, int64_t slot) {
  check_find_nonfinite_operands(x, flags, slot);
  const float* p = x.data<float>();
  int bad = 0;
  const int64_t n = x.numel();
  // A read-only pass (no write-back, unlike amp_unscale): half the memory traffic.
#pragma omp parallel for simd schedule(static) reduction(| : bad) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) bad |= nonfinite_value(p[i]) ? 1 : 0;
  if (bad) flags.data<float>()[slot] = 1.f;
}

}  // namespace

OptimKernels cpu_optim_kernels() {
  OptimKernels k{};
  k.sgd_step = sgd_step;
  k.sgd_step_runs = sgd_step_runs;
  k.adamw_step = adamw_step;
  k.adamw_step_runs = adamw_step_runs;
  k.lars_norms = lars_norms;
  k.lars_step = lars_step;
  k.lars_norms_runs = lars_norms_runs;
  k.lars_step_runs = lars_step_runs;
  k.dcs3gd_average = dcs3gd_average;
  k.dcs3gd_lambda = ref_optim_kernels().dcs3gd_lambda;  // a handful of scalars: ref's loop
  k.dcs3gd_update = dcs3gd_update;
  k.dcs3gd_drain = dcs3gd_drain;
  k.amp_unscale = amp_unscale;
  k.find_nonfinite = find_nonfinite;
  k.zero_if_flagged = ref_optim_kernels().zero_if_flagged;  // writes only on a dropped step
  return k;
}

}  // namespace dplab
