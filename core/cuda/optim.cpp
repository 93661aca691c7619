// CUDA optimizer kernel family: validation, stream choice and error context here; kernels in
// optim_kernels.cu. Everything is issued on the device's compute stream, after the backward
// pass that produced the gradients, and nothing waits on the host: the per-tensor reductions
// write into device tensors that the next kernel reads. Reduction scratch comes from the caching
// allocator, released in stream order (the next user of the block runs on the same stream).
#include "dplab/core/kernels/optim.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/launch_optim.h"
#include "dplab/core/cuda/stream.h"

namespace dplab {
namespace {

void check_on_cuda(const Tensor& t, const char* what) {
  DPLAB_CHECK(t.device().is_cuda(), "CUDA {}: {} is not a CUDA tensor", what, t.str());
}

// Makes t's device current for the launches of one kernel call (restored after).
class CurrentDevice {
 public:
  explicit CurrentDevice(const Tensor& t) {
    DPLAB_CUDA_CHECK(cudaGetDevice(&prev_));
    dev_ = t.device().index;
    if (dev_ != prev_) DPLAB_CUDA_CHECK(cudaSetDevice(dev_));
  }
  ~CurrentDevice() {
    if (dev_ != prev_) cudaSetDevice(prev_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  cudaStream_t stream() const { return cuda::launch_stream(dev_); }

 private:
  int prev_ = 0, dev_ = 0;
};

// f64 scratch for `count` partial sums on t's device (doubles held in an i64 tensor).
Tensor partials_for(const Tensor& t, int64_t count) {
  return Tensor::empty({count}, DType::i64, t.device());
}
double* f64_ptr(const Tensor& slots) {
  return static_cast<double*>(slots.raw_data());
}

void sgd_step(Tensor& param, const Tensor& grad, Tensor& buf, const SgdStepArgs& args) {
  check_sgd_operands(param, grad, buf, args);
  check_on_cuda(param, "sgd_step");
  CurrentDevice cur(param);
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  DPLAB_CUDA_CHECK(cuda::launch_sgd_step(param.data<float>(), grad.data<float>(), b, param.numel(),
                                         make_sgd_update(args), cur.stream()));
}

// Calls launch(batch, first) for the runs, kMaxOptimRunsPerLaunch at a time, `first` the index
// of the batch's first run in `runs`. Empty runs are left out unless `keep_empty` (LARS: every
// run has its pair of norms). Every batch carries the step's skip flags (undefined: none).
template <typename Launch>
void for_run_batches(const std::vector<OptimRun>& runs, bool keep_empty, const Tensor& skip_if,
                     Launch launch) {
  cuda::OptimRunBatch b;
  if (skip_if.defined()) {
    b.skip = skip_if.data<float>();
    b.skip_count = static_cast<int>(skip_if.numel());
  }
  size_t first = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const OptimRun& r = runs[i];
    if (r.numel == 0 && !keep_empty) continue;
    if (b.count == 0) first = i;
    b.offset[b.count] = r.offset;
    b.numel[b.count] = r.numel;
    b.decay[b.count] = r.weight_decay;
    b.excluded[b.count] = r.excluded;
    if (++b.count == cuda::kMaxOptimRunsPerLaunch) {
      launch(b, first);
      b.count = 0;
    }
  }
  if (b.count > 0) launch(b, first);
}

void sgd_step_runs(Tensor& param, const Tensor& grad, Tensor& buf,
                   const std::vector<OptimRun>& runs, const SgdStepArgs& args,
                   const Tensor& skip_if) {
  check_sgd_operands(param, grad, buf, args);
  check_optim_runs(runs, param.numel(), "CUDA sgd_step_runs");
  check_on_cuda(param, "sgd_step_runs");
  check_skip_flags(skip_if, param.device(), "CUDA sgd_step_runs");
  CurrentDevice cur(param);
  SgdStepArgs plain = args;
  plain.weight_decay = 0.f;
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  for_run_batches(runs, false, skip_if, [&](const cuda::OptimRunBatch& batch, size_t) {
    DPLAB_CUDA_CHECK(cuda::launch_sgd_step_runs(param.data<float>(), grad.data<float>(), b, batch,
                                                make_sgd_update(args), make_sgd_update(plain),
                                                cur.stream()));
  });
}

void adamw_step_runs(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     const std::vector<OptimRun>& runs, const AdamWStepArgs& args,
                     const Tensor& skip_if) {
  check_adamw_operands(param, grad, exp_avg, exp_avg_sq, args);
  check_optim_runs(runs, param.numel(), "CUDA adamw_step_runs");
  check_on_cuda(param, "adamw_step_runs");
  check_skip_flags(skip_if, param.device(), "CUDA adamw_step_runs");
  CurrentDevice cur(param);
  AdamWStepArgs plain = args;
  plain.weight_decay = 0.0;
  for_run_batches(runs, false, skip_if, [&](const cuda::OptimRunBatch& batch, size_t) {
    DPLAB_CUDA_CHECK(cuda::launch_adamw_step_runs(
        param.data<float>(), grad.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(),
        batch, make_adamw_update(args), make_adamw_update(plain), cur.stream()));
  });
}

void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const AdamWStepArgs& args) {
  check_adamw_operands(param, grad, exp_avg, exp_avg_sq, args);
  check_on_cuda(param, "adamw_step");
  CurrentDevice cur(param);
  DPLAB_CUDA_CHECK(cuda::launch_adamw_step(param.data<float>(), grad.data<float>(),
                                           exp_avg.data<float>(), exp_avg_sq.data<float>(),
                                           param.numel(), make_adamw_update(args), cur.stream()));
}

void lars_norms(const Tensor& param, const Tensor& grad, Tensor& norms) {
  check_lars_norm_operands(param, grad, norms);
  check_on_cuda(param, "lars_norms");
  CurrentDevice cur(param);
  const int64_t n = param.numel();
  Tensor partials = partials_for(param, 2 * int64_t(cuda::optim_reduce_blocks(n)));
  DPLAB_CUDA_CHECK(cuda::launch_lars_norms(param.data<float>(), grad.data<float>(), n,
                                           f64_ptr(partials), norms.data<float>(), cur.stream()));
}

void lars_step(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
               const LarsStepArgs& args) {
  check_lars_operands(param, grad, buf, norms, args);
  check_on_cuda(param, "lars_step");
  CurrentDevice cur(param);
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  const float* nm = args.excluded ? nullptr : norms.data<float>();
  DPLAB_CUDA_CHECK(cuda::launch_lars_step(
      param.data<float>(), grad.data<float>(), b, nm, param.numel(), args.lr, args.momentum,
      args.weight_decay, args.eta, args.eps, args.excluded, args.first_step, cur.stream()));
}

void lars_norms_runs(const Tensor& param, const Tensor& grad, const std::vector<OptimRun>& runs,
                     Tensor& norms) {
  check_lars_runs_operands(param, grad, runs, norms);
  check_on_cuda(param, "lars_norms_runs");
  CurrentDevice cur(param);
  for_run_batches(runs, true, Tensor(), [&](const cuda::OptimRunBatch& batch, size_t first) {
    cuda::RunPartials parts;
    int64_t total = 0;
    for (int r = 0; r < batch.count; ++r) {
      parts.offset[r] = total;
      // An excluded run: no blocks, and its pair of norms is not written.
      parts.blocks[r] = batch.excluded[r] ? 0 : cuda::optim_reduce_blocks(batch.numel[r]);
      total += 2 * int64_t(parts.blocks[r]);
    }
    // Released in stream order (see the top), as lars_norms' scratch is.
    Tensor partials = partials_for(param, total);
    DPLAB_CUDA_CHECK(cuda::launch_lars_norms_runs(param.data<float>(), grad.data<float>(), batch,
                                                  parts, f64_ptr(partials),
                                                  norms.data<float>() + 2 * first, cur.stream()));
  });
}

void lars_step_runs(Tensor& param, const Tensor& grad, Tensor& buf, const Tensor& norms,
                    const std::vector<OptimRun>& runs, const LarsStepArgs& args,
                    const Tensor& skip_if) {
  check_lars_step_runs_operands(param, grad, buf, norms, runs, args);
  check_on_cuda(param, "lars_step_runs");
  check_skip_flags(skip_if, param.device(), "CUDA lars_step_runs");
  CurrentDevice cur(param);
  float* b = args.momentum != 0.f ? buf.data<float>() : nullptr;
  // Empty runs kept: run y of a batch is runs[first + y], whose norms are at 2 (first + y).
  for_run_batches(runs, true, skip_if, [&](const cuda::OptimRunBatch& batch, size_t first) {
    DPLAB_CUDA_CHECK(cuda::launch_lars_step_runs(
        param.data<float>(), grad.data<float>(), b, norms.data<float>() + 2 * first, batch, args.lr,
        args.momentum, args.weight_decay, args.eta, args.eps, args.first_step, cur.stream()));
  });
}

void dcs3gd_average(Tensor& wbar, const Tensor& r, const Tensor& w, const Tensor& g,
                    const Dcs3gdAverageArgs& args, Tensor& sums) {
  check_dcs3gd_average_operands(wbar, r, w, g, args, sums);
  check_on_cuda(wbar, "dcs3gd_average");
  CurrentDevice cur(wbar);
  const int64_t n = wbar.numel();
  Tensor partials = partials_for(wbar, 3 * int64_t(cuda::optim_reduce_blocks(n)));
  DPLAB_CUDA_CHECK(cuda::launch_dcs3gd_average(
      wbar.data<float>(), args.have_r ? r.data<float>() : nullptr, w.data<float>(), g.data<float>(),
      n, args.ranks, args.have_r, f64_ptr(partials), f64_ptr(sums), cur.stream()));
}

void dcs3gd_lambda(const Tensor& sums, const Dcs3gdLambdaArgs& args, Tensor& lambdas) {
  const int64_t count = check_dcs3gd_lambda_operands(sums, lambdas);
  check_on_cuda(lambdas, "dcs3gd_lambda");
  CurrentDevice cur(lambdas);
  DPLAB_CUDA_CHECK(cuda::launch_dcs3gd_lambda(f64_ptr(sums), count, args.lambda0, args.global,
                                              args.correct, lambdas.data<float>(), cur.stream()));
}

void dcs3gd_update(const Tensor& g, const Tensor& wbar, Tensor& w, Tensor& v, Tensor& s,
                   const Dcs3gdUpdate& up, Tensor& wbar_sq, const Tensor& lambda) {
  check_dcs3gd_update_operands(g, wbar, w, v, s, wbar_sq, lambda);
  check_on_cuda(wbar, "dcs3gd_update");
  CurrentDevice cur(wbar);
  const int64_t n = wbar.numel();
  Tensor partials = partials_for(wbar, int64_t(cuda::optim_reduce_blocks(n)));
  DPLAB_CUDA_CHECK(cuda::launch_dcs3gd_update(g.data<float>(), wbar.data<float>(), w.data<float>(),
                                              v.data<float>(), s.data<float>(), n, up,
                                              lambda.defined() ? lambda.data<float>() : nullptr,
                                              f64_ptr(partials), f64_ptr(wbar_sq), cur.stream()));
}

void dcs3gd_drain(Tensor& wbar, const Tensor& r, Tensor& w, float ranks) {
  check_dcs3gd_drain_operands(wbar, r, w);
  check_on_cuda(wbar, "dcs3gd_drain");
  CurrentDevice cur(wbar);
  DPLAB_CUDA_CHECK(cuda::launch_dcs3gd_drain(wbar.data<float>(), r.data<float>(), w.data<float>(),
                                             wbar.numel(), ranks, cur.stream()));
}

void amp_unscale(Tensor& grads, float inv_scale, Tensor& found_inf) {
  check_amp_unscale_operands(grads, found_inf);
  check_on_cuda(grads, "amp_unscale");
  CurrentDevice cur(grads);
  DPLAB_CUDA_CHECK(cuda::launch_amp_unscale(grads.data<float>(), grads.numel(), inv_scale,
                                            found_inf.data<float>(), cur.stream()));
}

void find_nonfinite(const Tensor& x, Tensor& flags, int64_t slot) {
  check_find_nonfinite_operands(x, flags, slot);
  check_on_cuda(x, "find_nonfinite");
  CurrentDevice cur(x);
  DPLAB_CUDA_CHECK(cuda::launch_find_nonfinite(x.data<float>(), x.numel(),
                                               flags.data<float>() + slot, cur.stream()));
}

void zero_if_flagged(Tensor& x, const Tensor& flags) {
  DPLAB_CHECK(x.defined() && flags.defined(), "zero_if_flagged: an operand is undefined");
  check_dtype(x, DType::f32, "zero_if_flagged x");
  DPLAB_CHECK(x.is_contiguous(), "zero_if_flagged: x {} must be contiguous", x.str());
  check_skip_flags(flags, x.device(), "CUDA zero_if_flagged");
  check_on_cuda(x, "zero_if_flagged");
  CurrentDevice cur(x);
  DPLAB_CUDA_CHECK(cuda::launch_zero_if_flagged(x.data<float>(), x.numel(), flags.data<float>(),
                                                static_cast<int>(flags.numel()), cur.stream()));
}

}  // namespace

OptimKernels cuda_optim_kernels() {
  OptimKernels k{};
  k.sgd_step = sgd_step;
  k.adamw_step = adamw_step;
  k.sgd_step_runs = sgd_step_runs;
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
