// DC-S3GD (ALGORITHMS.md §4; papers/dc-s3gd.txt, Rigazzi): delay-compensated stale-synchronous
// SGD with staleness 1 and full overlap. Each rank keeps
//   W  the local weights (the parameter arena: forward and backward read it)
//   W̄  the average weights, kept explicitly so every rank holds it bitwise equal
//   V  its momentum, S its last update Δw (the payload of the allreduce), R the receive buffer.
// Algorithm 1 at the training loop's call points (comm/strategy.h):
//   before_forward   start iallreduce(S → R, SUM) if an update is pending; a progress thread
//                    drives it while forward and backward run (the whole pass overlaps it)
//   after_backward   wait; W̄ += R/N (eq. 8); D = W̄ − W (eq. 9);
//                    λ_k = λ0·‖g_k‖/‖g_k⊙g_k⊙D_k‖ per tensor k, 0 when the denominator is 0
//                    (eq. 17); g̃ = g + λ·g⊙g⊙D (eq. 10); v = μv − η_t(g̃ + wd_t·m_k·W̄),
//                    Δw = v (U, MXNet form); W = W̄ + Δw (eq. 12); S = Δw
//   (the loop's optimizer.step() is skipped: StepPlan.optimizer_step = false)
//   drain            allreduce the pending S and wait; W̄ += R/N; W = W̄; BatchNorm running
//                    statistics averaged. The evaluated model is W̄. Nothing is in flight after.
// The first step (and the first after a drain) has nothing in flight: D = 0, so it is the plain
// local momentum step W = W̄ + Δw of Algorithm 1's prologue.
// With the same data on every rank D = 0 and the trajectory is serial momentum SGD (MXNet form).
// On a CUDA arena a step never waits on the host: the wait is Request::complete_before_compute
// (the compute stream waits for the allreduce), the per-tensor sums stay on the device, λ is
// computed there (OptimKernels::dcs3gd_lambda) and read there by the update kernel, and the
// metrics read the sums back once per 64 steps or when asked for (last_tensor_stats, state).
//
// Schedule (Sec. IV-A): iteration based, lr η_t = η·f(t) with the peak η = the optimizer's lr
// (--lr), f a linear warm-up from 1/T_w to 1 over T_w iterations then a linear decay reaching 0
// at the end of training T; weight decay wd_t = wd·wd_mult·f(t) (--wd, wd_mult = 2.3), so the
// decay term η_t·wd_t is ∝ f² as in the paper's coupled MXNet form. Masks: no weight decay on
// BatchNorm parameters (ALGORITHMS.md; optionally on biases too, MXNet's default).
//
// Options ("dcs3gd." prefix): the keys, defaults and ranges are declared in dcs3gd_options.cpp.
//   lambda0        0 = no compensation (the ablation)
//   norm           per_tensor | global: the norms of eq. 17 per tensor or over all
//   correct_from   start | warmup_end: apply the correction from the first step, or only after
//                  warm-up (one reading of the paper's "re-scaling", notes §5.8)
//   schedule       warmup_linear (above) | loop: use the training loop's lr (the lr.* schedule)
//                  with wd_t = wd·wd_mult·lr_t/lr
//   warmup_epochs  warm-up length in epochs (fractional allowed); < 0: warmup_frac
//   warmup_frac    warm-up as a fraction of all iterations (paper: 15 of 90 epochs)
//   wd_mult        multiplier of --wd
//   wd_exclude     bn | bn_bias | none: parameters without weight decay
//   momentum       μ; < 0: the SGD optimizer's momentum (--momentum)
//   wire           f32, bf16 or f16: wire type of the update allreduce (f32 accumulate)
//   progress_us    a helper thread tests the in-flight allreduce every this many us during
//                  forward/backward (MPICH progresses only inside MPI calls); 0 = no helper:
//                  the allreduce progresses only in after_backward's wait
// plus the communicator options (ranks_per_node, link.intra, link.inter, comm.wait,
// comm.timeout_s; see comm/communicator.h).
#pragma once
#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// The members start at the declared defaults (dcs3gd_options.cpp; each enum's enumerators are
// its key's choices, in the declared order).
struct Dcs3gdOptions {
  enum class Norm { per_tensor, global };
  enum class Schedule { warmup_linear, loop };
  enum class WdExclude { bn, bn_bias, none };
  double lambda0 = dcs3gd_option_table().default_double("dcs3gd.lambda0");
  Norm norm = dcs3gd_option_table().default_choice<Norm>("dcs3gd.norm");
  bool correct_after_warmup =
      dcs3gd_option_table().default_string("dcs3gd.correct_from") == "warmup_end";
  Schedule schedule = dcs3gd_option_table().default_choice<Schedule>("dcs3gd.schedule");
  double warmup_epochs = dcs3gd_option_table().default_double("dcs3gd.warmup_epochs");
  double warmup_frac = dcs3gd_option_table().default_double("dcs3gd.warmup_frac");
  double wd_mult = dcs3gd_option_table().default_double("dcs3gd.wd_mult");
  WdExclude wd_exclude = dcs3gd_option_table().default_choice<WdExclude>("dcs3gd.wd_exclude");
  double momentum = dcs3gd_option_table().default_double("dcs3gd.momentum");
  DType wire = parse_dtype(dcs3gd_option_table().default_string("dcs3gd.wire"));
  double progress_s = dcs3gd_option_table().default_double("dcs3gd.progress_us") * 1e-6;
  // Reads the "dcs3gd." keys (dcs3gd_options.cpp); a bad value throws naming the key.
  static Dcs3gdOptions from_options(const Options& opt);
};

// The schedule shape f(t) for iteration t of T with a T_w-iteration warm-up: (t+1)/T_w while
// t < T_w, then (T − t)/(T − T_w), reaching 0 at t = T (never negative).
double dcs3gd_schedule_factor(int64_t t, int64_t total, int64_t warmup);

// The paper's peak lr (Sec. IV-A, notes §2): η_theo = lr_ref · global_batch / batch_ref (eq. 16
// read as the linear scaling rule, 0.1 at 256 for the ResNets) is where the warm-up, planned
// over half of all iterations, would end; stopped after warmup_frac of them it reaches
// η_theo · warmup_frac / (1/2): η_theo / 3 at 15 of 90 epochs, 4/9 η_theo at 20 of 90. --lr is
// this peak in dplab (the schedule's f reaches 1 at the end of the warm-up).
double dcs3gd_paper_theo_lr(int64_t global_batch, double lr_ref = 0.1, int64_t batch_ref = 256);
double dcs3gd_paper_peak_lr(int64_t global_batch, double warmup_frac, double lr_ref = 0.1,
                            int64_t batch_ref = 256);
// One line for the run's start (printed by rank 0 for --algo dcs3gd): both values for this
// run's global batch and warm-up, and the --lr in use.
std::string dcs3gd_peak_lr_note(int64_t global_batch, double warmup_frac, double lr);
// The run-start line of --algo dcs3gd (comm/registry.h AlgorithmInfo::run_note): the paper's peak
// lr for the run's global batch and warm-up next to the lr in use, so a user can set --lr to the
// paper's rule without deriving it. The warm-up fraction is dcs3gd.warmup_epochs / epochs when
// that option is >= 0, else dcs3gd.warmup_frac.
std::string dcs3gd_run_note(const Options& opt, int64_t global_batch, double lr);

// Per-tensor numbers of the last corrected step (for metrics and tests).
struct Dcs3gdTensorStats {
  double g_norm = 0;    // ‖g_k‖
  double ggd_norm = 0;  // ‖g_k⊙g_k⊙D_k‖
  double lambda = 0;    // λ_k
  double d_norm = 0;    // ‖D_k‖
};

class Dcs3gdStrategy : public DistributedStrategy {
 public:
  Dcs3gdStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  ~Dcs3gdStrategy() override;
  std::string name() const override { return "dcs3gd"; }
  void setup(TrainContext& ctx) override;
  void begin_epoch(int64_t epoch) override;
  StepPlan plan(const StepInfo& step) override;
  void before_forward(const StepInfo& step) override;
  void after_backward(const StepInfo& step) override;
  void drain() override;
  std::map<std::string, double> state() const override;
  // Warnings for a warm-up longer than the run (the schedule's decay, or with
  // dcs3gd.correct_from = warmup_end the delay compensation, never starts).
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;
  // The warmup_linear schedule decays to 0 at the end of the planned epochs.
  std::vector<std::string> planned_from_epochs() const override;

  const Dcs3gdOptions& options() const { return opt_; }
  const Tensor& average_weights() const { return wbar_; }  // W̄
  const Tensor& momentum() const { return v_; }            // V
  const Tensor& send_buffer() const { return s_; }         // S (the last Δw)
  // True while the update allreduce is posted and not yet waited for.
  bool in_flight() const { return !update_.empty(); }
  // True when S holds an update not yet added to W̄ on any rank (between steps).
  bool update_pending() const { return pending_; }
  // (Reads the recorded sums back from the arena's device first: a host synchronisation.)
  const std::vector<Dcs3gdTensorStats>& last_tensor_stats() const;
  // lr and weight decay of the last step (after the schedule).
  double last_lr() const { return last_lr_; }
  // The metrics' lr: the schedule's lr of the last update (the optimizer's before any).
  double applied_lr(double optimizer_lr) const override {
    return have_lr_ ? last_lr_ : optimizer_lr;
  }
  double last_wd() const { return last_wd_; }

 protected:
  // Checkpoints, between steps (nothing is in flight then: after_backward waits for the
  // allreduce, and R is consumed by the same step's update). Saved: W̄, V, S and whether S is
  // an update not yet sent ("pending": true between steps, false after drain(), which folds it
  // into W̄), so a checkpoint taken with or without drain() resumes exactly; the schedule's
  // peak lr, weight decay and μ taken from the optimizer at setup (checked on load: they fix the
  // trajectory); the epoch's metric sums. Not saved: W (the model, the trainer's), R and the
  // per-step sums, λ and history (recomputed every step), the weight-decay masks (from the arena
  // and options).
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  void start_allreduce();
  void finish_allreduce();  // waits; W̄ += R/N is left to the caller
  void join_progress();     // joins a stopped progress thread, rethrows its error
  void update(const StepInfo& step);
  // Metrics without a host read per step: each step's sums are copied into a device history
  // (kHistorySteps rows) and read back when it is full or a metric is asked for.
  static constexpr int64_t kHistorySteps = 64;
  void record_sums(bool have_r, bool correct);
  void flush_history() const;  // updates last_stats_, lambda_sum_, d_rel_sum_

  Dcs3gdOptions opt_;
  double peak_lr_ = 0, base_wd_ = 0, mu_ = 0;
  Tensor wbar_, v_, s_, r_;
  Tensor sums_;  // f64 slots (i64 storage), 4 per segment: Σg², Σ(g⊙g⊙D)², ΣD², ΣW̄²
  Tensor lambdas_;  // f32 λ per segment, on the arena's device (dcs3gd_lambda)
  Tensor history_;  // kHistorySteps rows of sums_, on the arena's device
  mutable std::vector<std::pair<bool, bool>> history_meta_;  // (have_r, correct) per row
  std::vector<float> wd_mask_;  // per arena segment: 1 = decayed, 0 = excluded
  bool pending_ = false;        // S holds an update not yet communicated
  bool received_ = false;       // R holds this iteration's sum (set by finish_allreduce)
  Pending update_;              // the update allreduce while in flight
  std::thread progress_;        // tests update_'s request during forward/backward
  std::atomic<bool> stop_progress_{false};
  std::exception_ptr progress_error_;
  double compute_start_ = 0;  // before_forward, on the run's time base (ctx_.time)
  mutable std::vector<Dcs3gdTensorStats> last_stats_;
  double last_lr_ = 0, last_wd_ = 0;
  bool have_lr_ = false;  // last_lr_ is an applied lr (an update ran, or a checkpoint's)

  // For state(): per-step means over the current epoch (reset in begin_epoch).
  int64_t steps_ = 0, corrected_steps_ = 0;
  int64_t epoch_ = -1;          // of the last begin_epoch
  int64_t resumed_epoch_ = -1;  // loaded epoch_: its begin_epoch keeps the loaded sums
  double compute_s_ = 0;
  mutable double lambda_sum_ = 0, d_rel_sum_ = 0;
};

std::unique_ptr<Strategy> make_dcs3gd_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of dcs3gd continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy dcs3gd_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
