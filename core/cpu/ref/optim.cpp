// Reference optimizer kernels: one plain loop per update, each element through the shared
// functor of core/optim_functors.h; reductions accumulate in f64 in index order.
#include <algorithm>
#include <bit>
#include <cmath>

#include "dplab/core/kernels/optim.h"

namespace dplab {

void check_sgd_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                        const SgdStepArgs& args) {
  check_dtype(param, DType::f32, "sgd_step param");
  check_dtype(grad, DType::f32, "sgd_step grad");
  check_same_device(param, grad, "sgd_step");
  DPLAB_CHECK(param.is_contiguous() && grad.is_contiguous(),
              "sgd_step: param {} and grad {} must be contiguous", param.str(), grad.str());
  DPLAB_CHECK(param.numel() == grad.numel(), "sgd_step: param has {} elements, grad {}",
              param.numel(), grad.numel());
  if (args.momentum != 0.f) {
    DPLAB_CHECK(buf.defined(), "sgd_step: momentum {} needs a momentum buffer", args.momentum);
    check_dtype(buf, DType::f32, "sgd_step momentum buffer");
    check_same_device(param, buf, "sgd_step");
    DPLAB_CHECK(buf.is_contiguous() && buf.numel() == param.numel(),
                "sgd_step: momentum buffer {} for param {}", buf.str(), param.str());
  }
}

void check_optim_runs(const std::vector<OptimRun>& runs, int64_t n, const char* what) {
  std::vector<std::pair<int64_t, int64_t>> spans;  // [begin, end) of each non-empty run
  for (size_t i = 0; i < runs.size(); ++i) {
    const OptimRun& r = runs[i];
    DPLAB_CHECK(r.offset >= 0 && r.numel >= 0 && r.offset <= n && r.numel <= n - r.offset,
                "{}: run {} (offset {}, {} elements) is outside the buffers' {} elements", what, i,
                r.offset, r.numel, n);
    if (r.numel > 0) spans.emplace_back(r.offset, r.offset + r.numel);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    DPLAB_CHECK(spans[i].first >= spans[i - 1].second, "{}: runs [{}, {}) and [{}, {}) overlap",
                what, spans[i - 1].first, spans[i - 1].second, spans[i].first, spans[i].second);
}

namespace {

// Every operand of a flat optimizer kernel: contiguous f32 with `numel` elements on `device`.
void check_flat_f32(const Tensor& t, int64_t numel, Device device, const char* what) {
  DPLAB_CHECK(t.defined(), "{}: operand is undefined", what);
  check_dtype(t, DType::f32, what);
  DPLAB_CHECK(t.device() == device, "{}: {} is not on {}", what, t.str(), device.str());
  DPLAB_CHECK(t.is_contiguous() && t.numel() == numel,
              "{}: expected a contiguous tensor of {} elements, got {}", what, numel, t.str());
}

void check_slots(const Tensor& t, int64_t n, DType dtype, Device device, const char* what) {
  DPLAB_CHECK(t.defined(), "{}: output is undefined", what);
  check_dtype(t, dtype, what);
  DPLAB_CHECK(t.device() == device, "{}: {} is not on {}", what, t.str(), device.str());
  DPLAB_CHECK(t.is_contiguous() && t.numel() == n,
              "{}: expected a contiguous tensor of {} elements, got {}", what, n, t.str());
}

}  // namespace

void check_lars_norm_operands(const Tensor& param, const Tensor& grad, const Tensor& norms) {
  DPLAB_CHECK(param.defined(), "lars_norms: param is undefined");
  check_flat_f32(param, param.numel(), param.device(), "lars_norms param");
  check_flat_f32(grad, param.numel(), param.device(), "lars_norms grad");
  check_slots(norms, 2, DType::f32, param.device(), "lars_norms norms");
}

void check_lars_runs_operands(const Tensor& param, const Tensor& grad,
                              const std::vector<OptimRun>& runs, const Tensor& norms) {
  DPLAB_CHECK(param.defined(), "lars runs: param is undefined");
  check_flat_f32(param, param.numel(), param.device(), "lars runs param");
  check_flat_f32(grad, param.numel(), param.device(), "lars runs grad");
  check_optim_runs(runs, param.numel(), "lars runs");
  check_slots(norms, int64_t(2 * runs.size()), DType::f32, param.device(), "lars runs norms");
}

void check_lars_step_runs_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                                   const Tensor& norms, const std::vector<OptimRun>& runs,
                                   const LarsStepArgs& args) {
  check_lars_runs_operands(param, grad, runs, norms);
  check_sgd_operands(param, grad, buf, {.momentum = args.momentum});  // the buffer, as lars_step
}

void lars_norms_run_by_run(void (*one)(const Tensor&, const Tensor&, Tensor&), const Tensor& param,
                           const Tensor& grad, const std::vector<OptimRun>& runs, Tensor& norms) {
  check_lars_runs_operands(param, grad, runs, norms);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].excluded) continue;  // trust 1: no norms needed
    const int64_t lo = runs[i].offset, hi = lo + runs[i].numel;
    Tensor nm = norms.flat_range(int64_t(2 * i), int64_t(2 * i + 2));
    one(param.flat_range(lo, hi), grad.flat_range(lo, hi), nm);
  }
}

void check_lars_operands(const Tensor& param, const Tensor& grad, const Tensor& buf,
                         const Tensor& norms, const LarsStepArgs& args) {
  SgdStepArgs s;
  s.momentum = args.momentum;
  check_sgd_operands(param, grad, buf, s);
  if (!args.excluded) check_slots(norms, 2, DType::f32, param.device(), "lars_step norms");
}

void check_adamw_operands(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, const AdamWStepArgs& args) {
  DPLAB_CHECK(param.defined(), "adamw_step: param is undefined");
  check_flat_f32(param, param.numel(), param.device(), "adamw_step param");
  check_flat_f32(grad, param.numel(), param.device(), "adamw_step grad");
  check_flat_f32(exp_avg, param.numel(), param.device(), "adamw_step exp_avg");
  check_flat_f32(exp_avg_sq, param.numel(), param.device(), "adamw_step exp_avg_sq");
  DPLAB_CHECK(args.step >= 1, "adamw_step: step {} (the bias corrections need t >= 1)", args.step);
}

void check_dcs3gd_average_operands(const Tensor& wbar, const Tensor& r, const Tensor& w,
                                   const Tensor& g, const Dcs3gdAverageArgs& args,
                                   const Tensor& sums) {
  DPLAB_CHECK(wbar.defined(), "dcs3gd_average: W̄ is undefined");
  const int64_t n = wbar.numel();
  const Device d = wbar.device();
  check_flat_f32(wbar, n, d, "dcs3gd_average W̄");
  if (args.have_r) check_flat_f32(r, n, d, "dcs3gd_average R");
  check_flat_f32(w, n, d, "dcs3gd_average W");
  check_flat_f32(g, n, d, "dcs3gd_average g");
  check_slots(sums, 3, DType::i64, d, "dcs3gd_average sums");
  DPLAB_CHECK(args.ranks >= 1.f, "dcs3gd_average: {} ranks", args.ranks);
}

void check_dcs3gd_update_operands(const Tensor& g, const Tensor& wbar, const Tensor& w,
                                  const Tensor& v, const Tensor& s, const Tensor& wbar_sq,
                                  const Tensor& lambda) {
  DPLAB_CHECK(wbar.defined(), "dcs3gd_update: W̄ is undefined");
  const int64_t n = wbar.numel();
  const Device d = wbar.device();
  check_flat_f32(g, n, d, "dcs3gd_update g");
  check_flat_f32(wbar, n, d, "dcs3gd_update W̄");
  check_flat_f32(w, n, d, "dcs3gd_update W");
  check_flat_f32(v, n, d, "dcs3gd_update V");
  check_flat_f32(s, n, d, "dcs3gd_update S");
  check_slots(wbar_sq, 1, DType::i64, d, "dcs3gd_update ΣW̄²");
  if (lambda.defined()) check_slots(lambda, 1, DType::f32, d, "dcs3gd_update λ");
}

int64_t check_dcs3gd_lambda_operands(const Tensor& sums, const Tensor& lambdas) {
  DPLAB_CHECK(lambdas.defined(), "dcs3gd_lambda: the λ output is undefined");
  const int64_t count = lambdas.numel();
  check_slots(lambdas, count, DType::f32, lambdas.device(), "dcs3gd_lambda λ");
  check_slots(sums, 4 * count, DType::i64, lambdas.device(), "dcs3gd_lambda sums");
  return count;
}

void check_dcs3gd_drain_operands(const Tensor& wbar, const Tensor& r, const Tensor& w) {
  DPLAB_CHECK(wbar.defined(), "dcs3gd_drain: W̄ is undefined");
  check_flat_f32(wbar, wbar.numel(), wbar.device(), "dcs3gd_drain W̄");
  check_flat_f32(r, wbar.numel(), wbar.device(), "dcs3gd_drain R");
  check_flat_f32(w, wbar.numel(), wbar.device(), "dcs3gd_drain W");
}

void check_amp_unscale_operands(const Tensor& grads, const Tensor& found_inf) {
  DPLAB_CHECK(grads.defined(), "amp_unscale: grads are undefined");
  check_flat_f32(grads, grads.numel(), grads.device(), "amp_unscale grads");
  check_slots(found_inf, 1, DType::f32, grads.device(), "amp_unscale found_inf");
}

void check_find_nonfinite_operands(const Tensor& x, const Tensor& flags, int64_t slot) {
  DPLAB_CHECK(x.defined(), "find_nonfinite: x is undefined");
  check_flat_f32(x, x.numel(), x.device(), "find_nonfinite x");
  DPLAB_CHECK(flags.defined(), "find_nonfinite: flags are undefined");
  check_slots(flags, flags.numel(), DType::f32, x.device(), "find_nonfinite flags");
  DPLAB_CHECK(slot >= 0 && slot < flags.numel(), "find_nonfinite: slot {} outside the {} flags",
              slot, flags.numel());
}

void check_skip_flags(const Tensor& skip_if, Device device, const char* what) {
  if (!skip_if.defined()) return;
  check_dtype(skip_if, DType::f32, what);
  DPLAB_CHECK(skip_if.device() == device, "{}: skip flags {} are not on {}", what, skip_if.str(),
              device.str());
  DPLAB_CHECK(skip_if.is_contiguous() && skip_if.numel() >= 1 && skip_if.numel() <= kMaxSkipFlags,
              "{}: skip flags must be a contiguous tensor of 1 to {} elements, got {}", what,
              kMaxSkipFlags, skip_if.str());
}

bool host_skip_requested(const Tensor& skip_if, const char* what) {
  if (!skip_if.defined()) return false;
  check_skip_flags(skip_if, skip_if.device(), what);
  DPLAB_CHECK(skip_if.device().is_cpu(), "{}: skip flags {} must be on the CPU here", what,
              skip_if.str());
  const float* f = skip_if.data<float>();
  for (int64_t i = 0; i < skip_if.numel(); ++i)
    if (f[i] != 0.f) return true;
  return false;
}

std::vector<double> f64_slot_values(const Tensor& slots) {
  DPLAB_CHECK(slots.defined() && slots.dtype() == DType::i64,
              "f64_slot_values: expected an i64 tensor of f64 slots, got {}",
              slots.defined() ? slots.str() : std::string("undefined"));
  const std::vector<int64_t> bits = slots.to_vector_i64();
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = std::bit_cast<double>(bits[i]);
  return out;
}

void set_f64_slot(Tensor& slots, int64_t i, double v) {
  check_slots(slots, slots.numel(), DType::i64, Device::cpu(), "set_f64_slot");
  DPLAB_CHECK(i >= 0 && i < slots.numel(), "set_f64_slot: slot {} of {}", i, slots.numel());
  slots.data<int64_t>()[i] = std::bit_cast<int64_t>(v);
}

namespace {

void sgd_step(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args) {
  check_sgd_operands(param, grad, buf, args);
  const SgdUpdate f = make_sgd_update(args);
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  const int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b ? b + i : nullptr);
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
  for (int64_t i = 0; i < n; ++i) f(p + i, g[i], m + i, v + i);
}

// The definition of the multi-tensor steps: the single-tensor step on each run in turn, its
// weight decay masked by the run's flag.
void sgd_step_runs(Tensor& param, const Tensor& grad, Tensor& buf,
                   const std::vector<OptimRun>& runs, const SgdStepArgs& args,
                   const Tensor& skip_if) {
  check_sgd_operands(param, grad, buf, args);
  check_optim_runs(runs, param.numel(), "sgd_step_runs");
  if (host_skip_requested(skip_if, "sgd_step_runs")) return;
  for (const OptimRun& r : runs) {
    SgdStepArgs a = args;
    if (!r.weight_decay) a.weight_decay = 0.f;
    Tensor p = param.flat_range(r.offset, r.offset + r.numel);
    const Tensor g = grad.flat_range(r.offset, r.offset + r.numel);
    Tensor b = args.momentum != 0.f ? buf.flat_range(r.offset, r.offset + r.numel) : Tensor();
    sgd_step(p, g, b, a);
  }
}

void adamw_step_runs(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const std::vector<OptimRun>& runs, const AdamWStepArgs& args,
                     const Tensor& skip_if) {
  check_adamw_operands(param, grad, exp_avg, exp_avg_sq, args);
  check_optim_runs(runs, param.numel(), "adamw_step_runs");
  if (host_skip_requested(skip_if, "adamw_step_runs")) return;
  for (const OptimRun& r : runs) {
    AdamWStepArgs a = args;
    if (!r.weight_decay) a.weight_decay = 0.0;
    const int64_t lo = r.offset, hi = r.offset + r.numel;
    Tensor p = param.flat_range(lo, hi), m = exp_avg.flat_range(lo, hi);
    Tensor v = exp_avg_sq.flat_range(lo, hi);
    adamw_step(p, grad.flat_range(lo, hi), m, v, a);
  }
}

double sum_sq(const float* x, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  return acc;
}

void lars_norms(const Tensor& param, const Tensor& grad, Tensor& norms) {
  check_lars_norm_operands(param, grad, norms);
  float* out = norms.data<float>();
  out[0] = static_cast<float>(std::sqrt(sum_sq(param.data<float>(), param.numel())));
  out[1] = static_cast<float>(std::sqrt(sum_sq(grad.data<float>(), grad.numel())));
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
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  const int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) f(p + i, g[i], b ? b + i : nullptr);
}

// The definition of the multi-tensor LARS step: the single-tensor kernels on each run in turn.
void lars_norms_runs(const Tensor& param, const Tensor& grad, const std::vector<OptimRun>& runs,
                     Tensor& norms) {
  lars_norms_run_by_run(lars_norms, param, grad, runs, norms);
}

void lars_step_runs(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
                    const std::vector<OptimRun>& runs, const LarsStepArgs& args,
                    const Tensor& skip_if) {
  check_lars_step_runs_operands(param, grad, buf, norms, runs, args);
  if (host_skip_requested(skip_if, "lars_step_runs")) return;
  for (size_t i = 0; i < runs.size(); ++i) {
    const OptimRun& r = runs[i];
    LarsStepArgs a = args;
    a.weight_decay = r.weight_decay ? args.weight_decay : 0.0;
    a.excluded = r.excluded;
    const int64_t lo = r.offset, hi = lo + r.numel;
    Tensor p = param.flat_range(lo, hi);
    Tensor b = args.momentum != 0.f ? buf.flat_range(lo, hi) : Tensor();
    lars_step(p, grad.flat_range(lo, hi), b, norms.flat_range(int64_t(2 * i), int64_t(2 * i + 2)),
              a);
  }
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
  double g2 = 0, c2 = 0, d2 = 0;
  const int64_t n = wbar.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float d = rp ? avg(wb[i], rp[i], wp[i]) : wb[i] - wp[i];
    terms(gp[i], d, g2, c2);
    d2 += double(d) * d;
  }
  set_f64_slot(sums, 0, g2);
  set_f64_slot(sums, 1, c2);
  set_f64_slot(sums, 2, d2);
}

void dcs3gd_lambda(const Tensor& sums, const Dcs3gdLambdaArgs& args, Tensor& lambdas) {
  const int64_t count = check_dcs3gd_lambda_operands(sums, lambdas);
  const int64_t* bits = sums.data<int64_t>();
  auto s = [bits](int64_t k) { return std::bit_cast<double>(bits[k]); };
  float* lam = lambdas.data<float>();
  if (!args.correct) {
    for (int64_t j = 0; j < count; ++j) lam[j] = 0.f;
    return;
  }
  if (args.global) {
    double g2 = 0, c2 = 0;
    for (int64_t j = 0; j < count; ++j) {
      g2 += s(4 * j);
      c2 += s(4 * j + 1);
    }
    const float l = static_cast<float>(dcs3gd_lambda_value(g2, c2, args.lambda0));
    for (int64_t j = 0; j < count; ++j) lam[j] = l;
    return;
  }
  for (int64_t j = 0; j < count; ++j)
    lam[j] = static_cast<float>(dcs3gd_lambda_value(s(4 * j), s(4 * j + 1), args.lambda0));
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
  for (int64_t i = 0; i < n; ++i) {
    avg(wb[i], rp[i], wp[i]);
    wp[i] = wb[i];
  }
}

void amp_unscale(Tensor& grads, float inv_scale, Tensor& found_inf) {
  check_amp_unscale_operands(grads, found_inf);
  const AmpUnscale f{inv_scale};
  float* g = grads.data<float>();
  bool bad = false;
  const int64_t n = grads.numel();
  for (int64_t i = 0; i < n; ++i) bad = f(g[i]) || bad;
  if (bad) found_inf.data<float>()[0] = 1.f;
}

void find_nonfinite(const Tensor& x, Tensor& flags, int64_t slot) {
  check_find_nonfinite_operands(x, flags, slot);
  const float* p = x.data<float>();
  bool bad = false;
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) bad = nonfinite_value(p[i]) || bad;
  if (bad) flags.data<float>()[slot] = 1.f;
}

void zero_if_flagged(Tensor& x, const Tensor& flags) {
  check_flat_f32(x, x.numel(), x.device(), "zero_if_flagged x");
  DPLAB_CHECK(flags.defined(), "zero_if_flagged: flags are undefined");
  check_skip_flags(flags, x.device(), "zero_if_flagged");
  if (!host_skip_requested(flags, "zero_if_flagged")) return;
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = 0.f;
}

}  // namespace

OptimKernels ref_optim_kernels() {
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
  k.dcs3gd_lambda = dcs3gd_lambda;
  k.dcs3gd_update = dcs3gd_update;
  k.dcs3gd_drain = dcs3gd_drain;
  k.amp_unscale = amp_unscale;
  k.find_nonfinite = find_nonfinite;
  k.zero_if_flagged = zero_if_flagged;
  return k;
}

}  // namespace dplab
