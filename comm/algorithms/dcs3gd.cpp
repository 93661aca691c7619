#include "dplab/comm/algorithms/dcs3gd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/dcs3gd_functors.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/run_options.h"
#include "dplab/optim/sgd.h"

namespace dplab {

Dcs3gdOptions Dcs3gdOptions::from_options(const Options& opt) {
  const OptionTable& t = dcs3gd_option_table();
  Dcs3gdOptions o;
  o.lambda0 = t.get_double(opt, "dcs3gd.lambda0");
  o.norm = t.get_choice<Norm>(opt, "dcs3gd.norm");
  o.correct_after_warmup = t.get_string(opt, "dcs3gd.correct_from") == "warmup_end";
  o.schedule = t.get_choice<Schedule>(opt, "dcs3gd.schedule");
  o.warmup_epochs = t.get_double(opt, "dcs3gd.warmup_epochs");
  o.warmup_frac = t.get_double(opt, "dcs3gd.warmup_frac");
  o.wd_mult = t.get_double(opt, "dcs3gd.wd_mult");
  o.wd_exclude = t.get_choice<WdExclude>(opt, "dcs3gd.wd_exclude");
  o.momentum = t.get_double(opt, "dcs3gd.momentum");
  o.wire = parse_dtype(t.get_string(opt, "dcs3gd.wire"));
  o.progress_s = t.get_double(opt, "dcs3gd.progress_us") * 1e-6;
  return o;
}

double dcs3gd_schedule_factor(int64_t t, int64_t total, int64_t warmup) {
  if (total <= 0) return 1.0;  // no known length: constant
  if (t < warmup) return double(t + 1) / double(warmup);
  if (total <= warmup) return 1.0;
  return std::max(0.0, double(total - t) / double(total - warmup));
}

double dcs3gd_paper_theo_lr(int64_t global_batch, double lr_ref, int64_t batch_ref) {
  DPLAB_CHECK(global_batch >= 1 && batch_ref >= 1,
              "dcs3gd_paper_theo_lr: global batch {} and reference batch {} must be >= 1",
              global_batch, batch_ref);
  return lr_ref * double(global_batch) / double(batch_ref);
}

double dcs3gd_paper_peak_lr(int64_t global_batch, double warmup_frac, double lr_ref,
                            int64_t batch_ref) {
  DPLAB_CHECK(warmup_frac >= 0 && warmup_frac <= 0.5,
              "dcs3gd_paper_peak_lr: warm-up fraction {} outside [0, 1/2] (the planned warm-up "
              "is half of all iterations)",
              warmup_frac);
  return dcs3gd_paper_theo_lr(global_batch, lr_ref, batch_ref) * warmup_frac / 0.5;
}

std::string dcs3gd_peak_lr_note(int64_t global_batch, double warmup_frac, double lr) {
  if (warmup_frac < 0 || warmup_frac > 0.5)
    return fmt::format(
        "  dcs3gd: --lr {} is the peak lr (warm-up fraction {} is outside the "
        "paper's rule)\n",
        lr, warmup_frac);
  return fmt::format(
      "  dcs3gd: the paper's peak lr for global batch {}: eta_theo = 0.1 x {}/256 = {:.4g} "
      "(eq. 16, linear scaling), peak = eta_theo x {:.4g} / (1/2) = {:.4g} (eta_theo/3 at a "
      "1/6 warm-up); --lr {} is the peak here\n",
      global_batch, global_batch, dcs3gd_paper_theo_lr(global_batch), warmup_frac,
      dcs3gd_paper_peak_lr(global_batch, warmup_frac), lr);
}

Dcs3gdStrategy::Dcs3gdStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)), opt_(Dcs3gdOptions::from_options(opt)) {}

Dcs3gdStrategy::~Dcs3gdStrategy() {
  // Never leave the progress thread running (e.g. after an exception between before_forward
  // and after_backward): it stops at its next wake-up.
  stop_progress_.store(true);
  if (progress_.joinable()) progress_.join();
}

void Dcs3gdStrategy::setup(TrainContext& ctx) {
  DPLAB_CHECK(ctx.optimizer != nullptr,
              "dcs3gd: setup needs the optimizer (its lr and weight decay are the peak values)");
  peak_lr_ = ctx.optimizer->lr();
  base_wd_ = ctx.optimizer->weight_decay();
  mu_ = opt_.momentum;
  if (const auto* sgd = dynamic_cast<const SGD*>(ctx.optimizer)) {
    // U is MXNet's momentum SGD: no dampening or Nesterov term to map PyTorch's onto.
    DPLAB_CHECK(!sgd->options().nesterov && sgd->options().dampening == 0,
                "dcs3gd: the local optimizer is MXNet-form momentum SGD; --nesterov and "
                "--dampening are not supported (got nesterov={}, dampening={})",
                sgd->options().nesterov, sgd->options().dampening);
    if (mu_ < 0) mu_ = sgd->options().momentum;
  }
  DPLAB_CHECK(mu_ >= 0, "dcs3gd: the optimizer is '{}', not SGD: set dcs3gd.momentum explicitly",
              ctx.optimizer->name());

  // Common rule: every rank starts from rank 0's parameters; W̄⁰ = W⁰.
  DistributedStrategy::setup(ctx);
  const Tensor& w = ctx.arena->params();
  wbar_ = w.clone();
  v_ = Tensor::zeros(w.shape(), DType::f32, w.device());
  s_ = Tensor::zeros(w.shape(), DType::f32, w.device());
  r_ = Tensor::zeros(w.shape(), DType::f32, w.device());

  // Weight-decay masks: no decay on BatchNorm (paper Sec. IV-A), optionally none on biases.
  // The arena's is_norm flag comes from whoever built it from the module tree (the trainer).
  wd_mask_.clear();
  for (const ArenaSegment& seg : ctx.arena->segments()) {
    bool decay = opt_.wd_exclude == Dcs3gdOptions::WdExclude::none || !seg.is_norm;
    if (opt_.wd_exclude == Dcs3gdOptions::WdExclude::bn_bias &&
        (seg.name == "bias" || seg.name.ends_with(".bias")))
      decay = false;
    wd_mask_.push_back(decay ? 1.f : 0.f);
  }
  last_stats_.assign(ctx.arena->segments().size(), {});
  history_meta_.clear();
  history_ = Tensor();
  pending_ = false;
}

StepPlan Dcs3gdStrategy::plan(const StepInfo&) {
  StepPlan p;
  p.zero_grad = true;
  p.optimizer_step = false;  // this strategy owns the update (after_backward)
  p.strategy_update = true;
  return p;
}

void Dcs3gdStrategy::start_allreduce() {
  join_progress();
  // R ← S, reduced in place: S stays untouched while the message is in flight.
  r_.copy_(s_);
  update_ = meter().iallreduce(world(), "dcs3gd update allreduce", r_, ReduceOp::sum, opt_.wire);
  pending_ = false;
  if (opt_.progress_s <= 0) return;
  // MPICH advances a non-blocking collective only inside MPI calls: this thread tests the
  // request every progress_s while forward and backward run, so the allreduce proceeds (paper
  // notes §4.1: "a helper thread that polls MPI_Test"). It polls slowly (no spinning) because
  // it competes with the compute for cores; it stops once done or once after_backward takes
  // over the wait. Under a virtual cluster its test() is real-time only (it is not the clock's
  // owner: comm/communicator.h): it only makes MPI progress and never moves the virtual clock,
  // so what the statistics count is decided by the compute thread's own wait below.
  // Its sleeps are real time too (a poll interval, not a modelled duration).
  stop_progress_.store(false);
  progress_ = std::thread([this, req = update_.requests().front(), dev = r_.device()]() mutable {
    WaitOptions w;
    w.policy = WaitPolicy::backoff;
    w.spin_tests = 0;
    w.sleep_s = opt_.progress_s;
    w.timeout_s = 0;  // the compute thread's own wait carries the timeout
    try {
      use_device(dev);  // see core/device.h: no CUDA context on GPU 0 for this thread
      polite_wait([&] { return stop_progress_.load(std::memory_order_relaxed) || req.test(); }, w,
                  [&] { return req.describe(); });
    } catch (...) {
      progress_error_ = std::current_exception();
    }
  });
}

void Dcs3gdStrategy::finish_allreduce() {
  stop_progress_.store(true);
  // Posted in before_forward, overlapped with forward and backward: the exposed wait is what
  // is left of it now (on NCCL the update kernels wait for it on the device; under a virtual
  // cluster the clock moves to the allreduce's virtual end if that is later).
  meter().complete(update_);
  received_ = true;
  // The progress thread exits at its next wake-up; it is joined before the next allreduce
  // (or in drain), off the critical path.
}

void Dcs3gdStrategy::join_progress() {
  if (progress_.joinable()) {
    stop_progress_.store(true);
    progress_.join();
  }
  if (progress_error_) std::rethrow_exception(std::exchange(progress_error_, nullptr));
}

void Dcs3gdStrategy::before_forward(const StepInfo&) {
  DPLAB_CHECK(wbar_.defined(), "dcs3gd: before_forward before setup");
  DPLAB_CHECK(!in_flight(), "dcs3gd: before_forward with the previous allreduce in flight");
  if (pending_) start_allreduce();  // Algorithm 1: MPI_Iallreduce(Δw_i), non-blocking
  compute_start_ = ctx_.time->now();
}

void Dcs3gdStrategy::after_backward(const StepInfo& step) {
  DPLAB_CHECK(wbar_.defined(), "dcs3gd: after_backward before setup");
  compute_s_ += ctx_.time->now() - compute_start_;
  if (in_flight()) finish_allreduce();  // Δw̄ = MPI_Wait()
  update(step);
}

void Dcs3gdStrategy::update(const StepInfo& step) {
  NoGradGuard no_grad;
  ParamArena& arena = *ctx_.arena;
  const auto& segs = arena.segments();
  const OptimKernels& k = backend_for(arena.device()).optim;
  const Tensor& w_all = arena.params();
  const Tensor& g_all = arena.grads();
  const bool have_r = std::exchange(received_, false);

  // Schedule (Sec. IV-A): lr and weight decay share the shape f(t).
  const int64_t total = step.steps_per_epoch * step.total_epochs;
  const int64_t warmup =
      opt_.warmup_epochs >= 0
          ? int64_t(std::llround(opt_.warmup_epochs * double(step.steps_per_epoch)))
          : int64_t(std::llround(opt_.warmup_frac * double(total)));
  double f, lr;
  if (opt_.schedule == Dcs3gdOptions::Schedule::loop) {
    lr = ctx_.optimizer->lr();
    f = peak_lr_ > 0 ? lr / peak_lr_ : 0.0;
  } else {
    f = dcs3gd_schedule_factor(step.global_step, total, warmup);
    lr = peak_lr_ * f;
  }
  const double wd = base_wd_ * opt_.wd_mult * f;
  const bool correct =
      opt_.lambda0 > 0 && !(opt_.correct_after_warmup && step.global_step < warmup);

  // Pass 1 (per tensor, the dcs3gd_average kernel): W̄ += R/N (eq. 8), D = W̄ − W (eq. 9),
  // Σg², Σ(g⊙g⊙D)², ΣD² (eq. 17) into 4 f64 slots per segment on the arena's device.
  const int64_t nseg = int64_t(segs.size());
  if (!sums_.defined() || sums_.numel() != 4 * nseg)
    sums_ = Tensor::zeros({4 * nseg}, DType::i64, arena.device());
  Dcs3gdAverageArgs avg_args;
  avg_args.ranks = float(world_size());
  avg_args.have_r = have_r;
  for (int64_t j = 0; j < nseg; ++j) {
    const int64_t b = segs[j].offset, e = b + segs[j].numel;
    Tensor wbar = wbar_.flat_range(b, e);
    Tensor sums = sums_.flat_range(4 * j, 4 * j + 3);
    k.dcs3gd_average(wbar, have_r ? r_.flat_range(b, e) : Tensor(), w_all.flat_range(b, e),
                     g_all.flat_range(b, e), avg_args, sums);
  }
  // (Alignment padding between segments is 0 in W, W̄, S and R and stays so.)
  // λ (eq. 17) of every tensor, computed where the sums are (the dcs3gd_lambda kernel) and read
  // there by pass 2: on a device the host never waits for the sums within a step.
  if (!lambdas_.defined() || lambdas_.numel() != nseg)
    lambdas_ = Tensor::zeros({nseg}, DType::f32, arena.device());
  Dcs3gdLambdaArgs lam_args;
  lam_args.lambda0 = opt_.lambda0;
  lam_args.global = opt_.norm == Dcs3gdOptions::Norm::global;
  lam_args.correct = correct;
  k.dcs3gd_lambda(sums_, lam_args, lambdas_);

  // Pass 2 (the dcs3gd_update kernel): g̃ (eq. 10), Δw = U(g̃) (MXNet momentum),
  // W = W̄ + Δw (eq. 12), S = Δw; ΣW̄² into the segment's 4th slot.
  for (int64_t j = 0; j < nseg; ++j) {
    const int64_t b = segs[j].offset, e = b + segs[j].numel;
    const Dcs3gdUpdate up{0.f /* λ: lambdas_[j] */, float(lr), float(mu_), float(wd * wd_mask_[j])};
    Tensor w = w_all.flat_range(b, e), v = v_.flat_range(b, e), s = s_.flat_range(b, e);
    Tensor wbar_sq = sums_.flat_range(4 * j + 3, 4 * j + 4);
    k.dcs3gd_update(g_all.flat_range(b, e), wbar_.flat_range(b, e), w, v, s, up, wbar_sq,
                    lambdas_.flat_range(j, j + 1));
  }
  // The metrics (per-tensor norms and λ, epoch means) come from this step's sums, kept on the
  // device and read back in batches (record_sums).
  record_sums(have_r, correct);
  pending_ = true;
  last_lr_ = lr;
  last_wd_ = wd;
  have_lr_ = true;
  ++steps_;
  if (have_r) ++corrected_steps_;
}

void Dcs3gdStrategy::record_sums(bool have_r, bool correct) {
  const int64_t width = sums_.numel();
  if (!history_.defined() || history_.numel() != kHistorySteps * width) {
    flush_history();
    history_ = Tensor::empty({kHistorySteps * width}, DType::i64, sums_.device());
  }
  if (int64_t(history_meta_.size()) == kHistorySteps) flush_history();
  const int64_t k = int64_t(history_meta_.size());
  Tensor slot = history_.flat_range(k * width, (k + 1) * width);
  slot.copy_(sums_);  // in stream order, before the next step's pass 1 overwrites sums_
  history_meta_.push_back({have_r, correct});
}

void Dcs3gdStrategy::flush_history() const {
  if (history_meta_.empty()) return;
  const int64_t width = sums_.numel(), nseg = width / 4;
  // The one device -> host copy per kHistorySteps steps (a host synchronisation on CUDA).
  const std::vector<double> all =
      f64_slot_values(history_.flat_range(0, int64_t(history_meta_.size()) * width));
  for (size_t i = 0; i < history_meta_.size(); ++i) {
    const double* sums = all.data() + i * size_t(width);
    const auto [have_r, correct] = history_meta_[i];
    double g2_all = 0, c2_all = 0;
    for (int64_t j = 0; j < nseg; ++j) {
      last_stats_[j].g_norm = std::sqrt(sums[4 * j]);
      last_stats_[j].ggd_norm = std::sqrt(sums[4 * j + 1]);
      last_stats_[j].d_norm = std::sqrt(sums[4 * j + 2]);
      g2_all += sums[4 * j];
      c2_all += sums[4 * j + 1];
    }
    // λ as the dcs3gd_lambda kernel computed it for the update (there rounded to f32).
    double lambda_mean = 0, d2_all = 0;
    for (int64_t j = 0; j < nseg; ++j) {
      Dcs3gdTensorStats& st = last_stats_[j];
      double lam = 0;
      if (correct)
        lam = opt_.norm == Dcs3gdOptions::Norm::per_tensor
                  ? dcs3gd_lambda_value(sums[4 * j], sums[4 * j + 1], opt_.lambda0)
                  : dcs3gd_lambda_value(g2_all, c2_all, opt_.lambda0);
      st.lambda = lam;
      lambda_mean += lam / double(nseg);
      d2_all += st.d_norm * st.d_norm;
    }
    if (have_r) {
      double wbar2 = 0;
      for (int64_t j = 0; j < nseg; ++j) wbar2 += sums[4 * j + 3];
      lambda_sum_ += lambda_mean;
      d_rel_sum_ += wbar2 > 0 ? std::sqrt(d2_all / wbar2) : 0.0;
    }
  }
  history_meta_.clear();
}

const std::vector<Dcs3gdTensorStats>& Dcs3gdStrategy::last_tensor_stats() const {
  flush_history();
  return last_stats_;
}

void Dcs3gdStrategy::drain() {
  DPLAB_CHECK(!in_flight(),
              "dcs3gd: drain with an allreduce in flight (drain must be called between steps)");
  if (wbar_.defined() && pending_) {
    // The last update: W̄ += (Σ_j Δw_j)/N; the evaluated model is W̄ (ALGORITHMS.md §4).
    start_allreduce();
    finish_allreduce();
    received_ = false;
    Tensor w = ctx_.arena->params();
    backend_for(wbar_.device()).optim.dcs3gd_drain(wbar_, r_, w, float(world_size()));
    s_.zero_();
  }
  join_progress();
  average_buffers();
}

void Dcs3gdStrategy::begin_epoch(int64_t epoch) {
  // A run resumed in the middle of `epoch` calls begin_epoch(epoch) again: the loaded sums of
  // that epoch's first steps stay.
  if (std::exchange(resumed_epoch_, -1) == epoch) return;
  epoch_ = epoch;
  flush_history();  // the recorded steps belong to the epoch before
  steps_ = corrected_steps_ = 0;
  compute_s_ = lambda_sum_ = d_rel_sum_ = 0;
}

void Dcs3gdStrategy::save_algorithm_state(StateDict& out) const {
  DPLAB_CHECK(wbar_.defined(), "dcs3gd: save_state before setup");
  DPLAB_CHECK(!in_flight() && !received_,
              "dcs3gd: save_state with the update allreduce in flight (call it between steps)");
  flush_history();  // the epoch sums include every recorded step
  out.put_int("ranks", world_size());
  out.put_tensor("W_bar", wbar_);
  out.put_tensor("V", v_);
  out.put_tensor("S", s_);
  out.put_bool("pending", pending_);
  out.put_double("peak_lr", peak_lr_);
  out.put_double("base_wd", base_wd_);
  out.put_double("momentum", mu_);
  out.put_int("epoch", epoch_);
  out.put_int("epoch_steps", steps_);
  out.put_int("epoch_corrected_steps", corrected_steps_);
  out.put_double("epoch_compute_s", compute_s_);
  out.put_double("epoch_lambda_sum", lambda_sum_);
  out.put_double("epoch_d_rel_sum", d_rel_sum_);
  out.put_double("last_lr", last_lr_);
  out.put_double("last_wd", last_wd_);
}

void Dcs3gdStrategy::load_algorithm_state(const StateDict& in) {
  DPLAB_CHECK(wbar_.defined(), "dcs3gd: load_state before setup");
  DPLAB_CHECK(!in_flight(), "dcs3gd: load_state with the update allreduce in flight");
  const int n = world_size();
  state_int(in, "dcs3gd", "ranks", n, n);  // W̄ is the average over exactly these ranks
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  // The schedule's peak values come from the optimizer at setup; a different value would
  // change every later step.
  const std::pair<const char*, double> fixed[] = {
      {"peak_lr", peak_lr_}, {"base_wd", base_wd_}, {"momentum", mu_}};
  for (const auto& [key, now] : fixed) {
    const double saved = in.get_double(key);
    DPLAB_CHECK(saved == now,
                "{}: dcs3gd state '{}' = {} but this run has {} (from the optimizer's lr, "
                "weight decay and momentum at setup)",
                where, key, saved, now);
  }
  const int64_t epoch = state_int(in, "dcs3gd", "epoch", -1, INT64_MAX);
  const int64_t steps = state_int(in, "dcs3gd", "epoch_steps", 0, INT64_MAX);
  const int64_t corrected = state_int(in, "dcs3gd", "epoch_corrected_steps", 0, steps);
  const bool pending = in.get_bool("pending");
  restore_tensor(in, "dcs3gd", "W_bar", wbar_);
  restore_tensor(in, "dcs3gd", "V", v_);
  restore_tensor(in, "dcs3gd", "S", s_);
  pending_ = pending;
  received_ = false;
  history_meta_.clear();
  epoch_ = resumed_epoch_ = epoch;
  steps_ = steps;
  corrected_steps_ = corrected;
  compute_s_ = in.get_double("epoch_compute_s");
  lambda_sum_ = in.get_double("epoch_lambda_sum");
  d_rel_sum_ = in.get_double("epoch_d_rel_sum");
  last_lr_ = in.get_double("last_lr");
  have_lr_ = true;
  last_wd_ = in.get_double("last_wd");
}

std::map<std::string, double> Dcs3gdStrategy::state() const {
  // Means over the steps of the current epoch (the loop reads state() after the epoch).
  flush_history();
  const double n = steps_ > 0 ? double(steps_) : 1.0;
  const double nc = corrected_steps_ > 0 ? double(corrected_steps_) : 1.0;
  return {{"ranks", double(world_size())},
          {"nodes", double(topology().num_nodes())},
          {"staleness", 1.0},
          {"lambda0", opt_.lambda0},
          {"lambda_mean", lambda_sum_ / nc},
          {"d_rel_mean", d_rel_sum_ / nc},
          {"lr", last_lr_},
          {"wd", last_wd_},
          {"compute_s_per_step", compute_s_ / n},
          {"steps", double(steps_)}};
}

std::vector<std::string> Dcs3gdStrategy::plan_notes(const RunPlan& plan) const {
  // The warm-up in iterations, as after_backward computes it from the planned epochs.
  const int64_t total = plan.steps_per_epoch * plan.epochs;
  const int64_t warmup =
      opt_.warmup_epochs >= 0
          ? int64_t(std::llround(opt_.warmup_epochs * double(plan.steps_per_epoch)))
          : int64_t(std::llround(opt_.warmup_frac * double(total)));
  const std::string from = opt_.warmup_epochs >= 0
                               ? fmt::format("dcs3gd.warmup_epochs = {}", opt_.warmup_epochs)
                               : fmt::format("dcs3gd.warmup_frac = {}", opt_.warmup_frac);
  std::vector<std::string> v;
  if (opt_.schedule == Dcs3gdOptions::Schedule::warmup_linear && warmup >= plan.steps)
    v.push_back(fmt::format(
        "warning: DC-S3GD's warm-up ({}) lasts {} steps and the run plans {}: the learning rate "
        "never reaches --lr and its linear decay never starts",
        from, warmup, plan.steps));
  if (opt_.correct_after_warmup && opt_.lambda0 > 0 && warmup >= plan.steps)
    v.push_back(fmt::format(
        "warning: dcs3gd.correct_from = warmup_end and the warm-up ({}) lasts {} steps, the run "
        "plans {}: the delay compensation never starts",
        from, warmup, plan.steps));
  return v;
}

std::vector<std::string> Dcs3gdStrategy::planned_from_epochs() const {
  if (opt_.schedule != Dcs3gdOptions::Schedule::warmup_linear) return {};
  return {
      "DC-S3GD's learning-rate schedule (dcs3gd.schedule = warmup_linear: linear decay to 0 "
      "at the end of the planned epochs)"};
}

std::unique_ptr<Strategy> make_dcs3gd_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<Dcs3gdStrategy>(std::move(topo), opt);
}

ReshardPolicy dcs3gd_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the local weights' average; W_bar (global) rank 0's; the momentum V and the pending "
      "update S averaged (W = W_bar + S still holds, and the next allreduce adds the same "
      "mean update); the epoch's statistics rank 0's");
  p.rules.algo = {{"ranks", Combine::fresh},
                  {"V", Combine::mean},
                  {"S", Combine::mean},
                  {"epoch_corrected_steps", Combine::rank0},
                  {"epoch_compute_s", Combine::rank0},
                  {"epoch_lambda_sum", Combine::rank0},
                  {"epoch_d_rel_sum", Combine::rank0}};
  return p;
}

std::string dcs3gd_run_note(const Options& opt, int64_t global_batch, double lr) {
  const OptionTable& t = dcs3gd_option_table();
  const double warmup_epochs = t.get_double(opt, "dcs3gd.warmup_epochs");
  const double epochs = double(run_option_table().get_int(opt, "epochs"));
  const double frac = warmup_epochs >= 0 && epochs > 0 ? warmup_epochs / epochs
                                                       : t.get_double(opt, "dcs3gd.warmup_frac");
  return dcs3gd_peak_lr_note(global_batch, frac, lr);
}

}  // namespace dplab
