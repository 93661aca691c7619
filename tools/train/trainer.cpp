#include "dplab/tools/train/trainer.h"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/slowdown.h"
#include "dplab/comm/world.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/schedule.h"
#include "dplab/optim/sgd.h"
#include "dplab/tools/train/accumulation.h"
#include "dplab/tools/train/builtin_datasets.h"
#include "dplab/tools/train/checkpoint.h"
#include "dplab/tools/train/config.h"
#include "dplab/tools/train/data_pipeline.h"
#include "dplab/tools/train/epoch_record.h"
#include "dplab/tools/train/eval_split.h"
#include "dplab/tools/train/evaluate.h"
#include "dplab/tools/train/metrics.h"
#include "dplab/tools/train/model_file.h"
#include "dplab/tools/train/model_parts.h"
#include "dplab/tools/train/nonfinite_guard.h"
#include "dplab/tools/train/preemption.h"
#include "dplab/tools/train/progress.h"
#include "dplab/tools/train/registry.h"
#include "dplab/tools/train/run_record.h"
#include "dplab/tools/train/run_trace.h"
#include "dplab/tools/train/setting_warnings.h"
#include "dplab/tools/train/step_agreement.h"
#include "dplab/tools/train/step_metrics.h"
#include "dplab/tools/train/step_record.h"

namespace dplab {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string get(const Options& opt, const std::string& key) {
  return opt.get_string(key, option_default(key));
}
int64_t get_int(const Options& opt, const std::string& key) {
  return opt.get_int(key, std::stoll(option_default(key)));
}
double get_double(const Options& opt, const std::string& key) {
  return opt.get_double(key, std::stod(option_default(key)));
}

}  // namespace

void apply_thread_option(int64_t threads) {
  DPLAB_CHECK(threads >= 0, "option threads: expected >= 0, got {}", threads);
  if (threads > 0) omp_set_num_threads(int(threads));
  // Default under mpiexec: the ranks on this host share its cores (comm/mpi_env.h).
  if (threads == 0 && local_ranks_hint() > 1)
    omp_set_num_threads(std::max(1, omp_get_num_procs() / local_ranks_hint()));
}

TrainResult run_training(const Options& opt, std::ostream& summary, std::ostream& progress_out) {
  return run_training(opt, Registry::with_builtins(), summary, progress_out);
}

TrainResult run_training(const Options& opt, const Registry& registry, std::ostream& summary,
                         std::ostream& progress_out) {
  const auto t_start = Clock::now();
  const auto start_time = std::chrono::system_clock::now();  // the run record's start_time
  apply_thread_option(get_int(opt, "threads"));
  cluster::refuse_cluster_until_wired(opt);  // --cluster: virtual time not wired yet (#20)

  // ---- set-up: read every option before the first step, so typos fail fast ---------------
  const std::string model_name = get(opt, "model");
  const uint64_t seed = uint64_t(get_int(opt, "seed"));
  const int64_t epochs = get_int(opt, "epochs");
  const int64_t batch = get_int(opt, "batch");
  const int64_t max_steps = get_int(opt, "max_steps");
  const int64_t eval_batch = get_int(opt, "eval.batch");
  const int64_t ckpt_every = get_int(opt, "checkpoint.every_epochs");
  const int64_t ckpt_every_steps = get_int(opt, "checkpoint.every_steps");
  const int64_t ckpt_keep = get_int(opt, "checkpoint.keep");
  const float label_smoothing = float(get_double(opt, "label_smoothing"));
  // amp = off | bf16 | f16 (mixed precision; core/autocast.h, optim/grad_scaler.h).
  const std::string amp = get(opt, "amp");
  DPLAB_CHECK(amp == "off" || amp == "bf16" || amp == "f16",
              "option amp: expected off, bf16 or f16, got '{}'", amp);
  const DType amp_dtype = amp == "bf16" ? DType::bf16 : amp == "f16" ? DType::f16 : DType::f32;
  const std::string out_dir = get(opt, "out");
  const std::string resume = get(opt, "resume");
  const std::vector<std::string> resume_overrides =
      split_override_list(get(opt, "resume.override"));
  const std::string init_from = get(opt, "init_from");
  DPLAB_CHECK(resume.empty() || init_from.empty(),
              "options resume and init_from exclude each other (resume continues a run, init_from "
              "starts a new one from a checkpoint's weights)");
  DPLAB_CHECK(ckpt_every >= 0 && ckpt_every_steps >= 0 && ckpt_keep >= 0,
              "options checkpoint.every_epochs ({}), checkpoint.every_steps ({}) and "
              "checkpoint.keep ({}): expected >= 0",
              ckpt_every, ckpt_every_steps, ckpt_keep);
  DPLAB_CHECK(epochs >= 1, "option epochs: expected >= 1, got {}", epochs);
  DPLAB_CHECK(batch >= 1, "option batch: expected >= 1, got {}", batch);
  DPLAB_CHECK(max_steps >= 0, "option max_steps: expected >= 0, got {}", max_steps);
  // nonfinite = stop | skip (tools/train/nonfinite_guard.h); preempt.signals: installed at
  // once, so a signal during set-up (data indexing can take minutes) is not lost, but only with
  // an output directory to save to (tools/train/preemption.h).
  const NonfinitePolicy nonfinite = parse_nonfinite_policy(get(opt, "nonfinite"));
  const std::vector<int> preempt_signals = parse_preempt_signals(get(opt, "preempt.signals"));
  PreemptionSignals preemption(out_dir.empty() ? std::vector<int>{} : preempt_signals);
  const Progress::Mode progress_mode = Progress::parse_mode(get(opt, "progress"));
  const int every_percent = int(get_int(opt, "progress.every_percent"));
  // Step records every N global steps (tools/train/step_record.h; 0: none).
  const int64_t metrics_every_steps = get_int(opt, "metrics.every_steps");
  // comm = mpi | nccl | auto (comm/world.h), validated for every algorithm. NCCL needs a GPU per
  // rank: a bare "cuda" then means this rank's (local rank mod device count).
  const bool nccl = comm_backend(opt) == "nccl" && get(opt, "algo") != "local";
  const Device device = nccl && get(opt, "device") == "cuda" ? Device::cuda(nccl_rank_device())
                                                             : Device::parse(get(opt, "device"));
  // device = cpu | cuda[:N]: checked before any data is read, so a run on a machine without
  // the device fails at once and says why.
  if (device.is_cuda()) {
    DPLAB_CHECK(cuda_available(), "option device = {}: {}", device.str(),
                cuda_unavailable_reason());
    DPLAB_CHECK(device.index < cuda_device_count(), "option device = {}: only {} CUDA device(s)",
                device.str(), cuda_device_count());
    use_device(device);  // this thread's device from now on (no context on GPU 0 for rank N)
  }

  // Data, model, optimizer, schedule and algorithm by name from `registry` (registry.h).
  const std::string data_spec = get(opt, "data");
  const TrainData data = registry.dataset(data_spec).make(data_spec, opt);
  // Model, arena, optimizer and loss scaler (tools/train/model_parts.h).
  ModelParts built =
      build_model_parts(opt, registry, model_name, data, seed, init_from, device, amp == "f16");
  const std::shared_ptr<Module> model = built.model;
  ParamArena& arena = *built.arena;
  Optimizer& optimizer = *built.optimizer;
  GradScaler* const scaler = built.scaler.get();
  const GradAccumulation accumulation(get_int(opt, "accumulate_steps"));
  // Summing micro-batch gradients commutes only with averaging algorithms.
  DPLAB_CHECK(
      accumulation.steps() == 1 || get(opt, "algo") == "local" || get(opt, "algo") == "allreduce",
      "option accumulate_steps = {} needs algo local or allreduce, got '{}'", accumulation.steps(),
      get(opt, "algo"));
  std::unique_ptr<LrSchedule> schedule =
      registry.schedule(get(opt, "lr.schedule")).make(opt, epochs);

  // Timeline (tools/train/run_trace.h): outlives the strategy, whose threads record into it.
  const std::unique_ptr<trace::Tracer> run_tracer = make_run_tracer(opt, out_dir, device);
  trace::Tracer* const tracer = run_tracer.get();
  const std::unique_ptr<Strategy> strategy = set_up_strategy(opt, registry, built, tracer);
  const bool rank0 = strategy->rank() == 0;
  // Every rank learns whether any rank saw a non-finite value or a pre-emption signal, kLag
  // ticks later (a non-blocking 8-byte allreduce per tick; tools/train/step_agreement.h).
  // Collective construction.
  StepAgreement agreement(opt, strategy->world_size());
  // Under amp = f16 the loss scaler owns inf/NaN gradients; the guard then checks the loss.
  NonfiniteGuard guard(arena, !scaler);
  // --slowdown RANK=FACTOR: this rank's compute is stretched by sleeping (comm/slowdown.h).
  Slowdown slowdown = Slowdown::from_options(opt, strategy->rank(), strategy->world_size());

  // This rank's batches: sampler or shard stream, loader workers, device upload
  // (tools/train/data_pipeline.h).
  DataPipeline pipeline(
      data.train,
      DataPipelineOptions::from(opt, strategy->rank(), strategy->world_size(), seed, batch),
      device);
  StepMetrics step_metrics(device);  // loss and accuracy sums, read back once per log line
  // Evaluation: split across the ranks on a communicator of its own, with the loader's workers
  // (tools/train/evaluate.h); eval.batch 0 picks a batch from the image size.
  std::shared_ptr<Communicator> eval_comm;
  if (strategy->world_size() > 1) eval_comm = eval_world(opt);
  EvalOptions eval_opt;
  eval_opt.batch_size = eval_batch;
  eval_opt.workers = pipeline.options().workers;
  eval_opt.prefetch = pipeline.options().prefetch;
  eval_opt.comm = eval_comm.get();
  const int64_t steps_per_epoch = pipeline.steps_per_epoch();
  // A batch larger than a rank's share: said once (tools/train/setting_warnings.h).
  if (const std::string w = batch_warning(batch, pipeline.rank_samples()); !w.empty() && rank0)
    progress_out << w << "\n";

  // ---- resume (tools/train/checkpoint.h) ----------------------------------------------------
  // Every option read so far that changes the trajectory; the checkpoints store it.
  RunIdentity run;
  run.algo = strategy->name();
  run.ranks_per_node = opt.get_string("ranks_per_node", "0");
  run.init_from = init_from;
  run.config = trajectory_config(opt);
  // After the last option read: every key the run reads, run.json's included, is known here
  // (a run.json whose keys were read only after this check could not be a --config).
  check_no_unknown_options(opt);
  const RankGroup ranks(strategy->rank(), strategy->world_size());
  start_run_trace(tracer, ranks, opt,
                  max_steps > 0
                      ? std::min(epochs * steps_per_epoch, max_steps * accumulation.steps())
                      : epochs * steps_per_epoch);
  // The run header and OUT/run.json (collective: host names; tools/train/run_record.h).
  RunFacts facts;
  facts.model = model_name;
  for (const NamedTensor& p : model->named_parameters()) facts.parameters += p.tensor.numel();
  facts.algo = strategy->name();
  facts.batch = batch;
  facts.accumulate_steps = accumulation.steps();
  facts.device = device.str();
  facts.threads = omp_get_max_threads();
  facts.data = get(opt, "data");
  facts.train_samples = data.train->size();
  facts.test_samples = data.test->size();
  facts.start = start_time;
  record_run_start(opt, ranks, facts, summary);
  TrainingParts parts;
  parts.model = model.get();
  parts.optimizer = &optimizer;
  parts.strategy = strategy.get();
  parts.schedule = schedule.get();
  parts.scaler = scaler;
  LoopState loop;
  if (!resume.empty()) {
    const Manifest m = find_resume_checkpoint(resume, ranks, progress_out);
    std::vector<std::string> allowed;
    ranks.agree([&] {  // a refusal, or one rank's unreadable file, stops every rank together
      allowed = check_resume_identity(m, ranks, run, resume_overrides);
      loop = load_rank_state(m, ranks.rank(), parts, steps_per_epoch);
    });
    if (!m.init_from.empty()) run.init_from = m.init_from;
    if (rank0) {
      for (const auto& a : allowed) summary << "resume: " << a << " (allowed by resume.override)\n";
      summary << fmt::format("resumed from {} at epoch {} step {} (global step {})\n",
                             m.dir.string(), loop.epoch + 1, loop.step_in_epoch, loop.global_step);
    }
  }

  MetricsWriter metrics;
  // Every rank's own timing (idle fraction = comm_exposed_wait_s / time_s) in DIR/rank_R.jsonl.
  MetricsWriter rank_metrics;
  if (!out_dir.empty() && strategy->world_size() > 1) {
    std::filesystem::create_directories(out_dir);
    rank_metrics = MetricsWriter(
        (std::filesystem::path(out_dir) / fmt::format("rank_{}.jsonl", strategy->rank())).string(),
        !resume.empty());
  }
  if (!out_dir.empty() && rank0) {
    std::filesystem::create_directories(out_dir);
    metrics =
        MetricsWriter((std::filesystem::path(out_dir) / "metrics.jsonl").string(), !resume.empty());
  }
  // Epoch, final and step records over every rank (tools/train/epoch_record.h, step_record.h).
  RunReport report(ranks, metrics, rank_metrics, t_start);
  CommTally comm_tally;
  StepLog step_log(metrics_every_steps, ranks, metrics, rank_metrics, t_start);
  // A run stopped for non-finite values: the record, then RunStopped on every rank (exit 3).
  auto stop_nonfinite = [&](const std::string& what, const Agreement& agreed) {
    strategy->drain();  // every rank is here at the same tick: nothing left in flight
    if (rank0)
      metrics.write({{"kind", "stopped"},
                     {"reason", "nonfinite"},
                     {"step", loop.global_step},
                     {"ranks", agreed.reporting_ranks()},
                     {"detail", agreed.joined_reports()}});
    finish_run_trace(tracer, ranks, out_dir, &progress_out);  // the trace so far, merged
    throw RunStopped(
        fmt::format("non-finite values {}: {}; every rank stopped (nonfinite = stop, "
                    "exit status {}); no checkpoint was written{}",
                    what, agreed.joined_reports(), kExitNonfinite,
                    out_dir.empty() ? "" : ", any earlier one in " + out_dir + " is as it was"),
        kExitNonfinite, rank0);
  };
  // No checkpoint holds an inf or NaN (the model's state_dict, the optimizer's and the
  // algorithm's state): every rank checks its own and they agree before anything is written.
  auto check_state_finite = [&](const std::string& name) {
    // (Every tick was flushed and acted on first: at the end of its epoch's loop, or by
    // checkpoint().)
    std::vector<NamedTensor> state = model->state_dict();
    for (const NamedTensor& t : optimizer.state()) state.push_back(t);
    StateDict algo;
    strategy->save_state(algo);
    std::vector<std::string> bad = nonfinite_names(state);
    for (const std::string& n : nonfinite_entries(algo)) bad.push_back("algo." + n);
    const Agreement agreed = agreement.agree(
        !bad.empty(), false, [&] { return fmt::format("non-finite {}", name_list(bad)); });
    if (agreed.nonfinite)
      stop_nonfinite(fmt::format("in the state to be written to {} after {} step{}", name,
                                 loop.global_step, loop.global_step == 1 ? "" : "s"),
                     agreed);
  };
  Progress progress(rank0 ? progress_mode : Progress::Mode::off, every_percent, progress_out,
                    strategy->world_size() > 1 ? " (rank 0's own)" : "");
  TrainResult result;
  result.is_rank0 = rank0;
  bool stop = max_steps > 0 && loop.optimizer_steps >= max_steps;
  int64_t skipped_steps = 0;  // StepPlan::compute == false ticks (count toward max_steps)
  const double base_lr = built.base_lr;
  bool evaluated = false;
  int64_t last_epoch_number = loop.epoch;  // 1-based number of the last epoch trained
  // nonfinite = skip: the optimizer step in progress is dropped (set at the tick whose check
  // failed, applied at the tick that would step: accumulated micro-batches are dropped whole).
  bool drop_step = false;
  bool preempted = false;       // some rank received a pre-emption signal (agreed)
  std::string preempt_reports;  // which rank received which signal
  // Acts on agreed ticks (tools/train/step_agreement.h), on every rank at the same point.
  auto act_on = [&](const std::vector<Agreement>& due) {
    for (const Agreement& a : due) {
      if (a.nonfinite && nonfinite == NonfinitePolicy::stop) {
        progress.end_epoch();  // ends a progress bar's line before the message
        stop_nonfinite(fmt::format("at global step {} (0-based; epoch {}, batch {} of {})", a.tick,
                                   a.tick / steps_per_epoch + 1, a.tick % steps_per_epoch + 1,
                                   steps_per_epoch),
                       a);
      }
      if (a.preempt && !preempted) {
        preempted = true;
        std::string who;
        for (size_t r = 0; r < a.reports.size(); ++r)
          if (const size_t at = a.reports[r].find("received SIG"); at != std::string::npos)
            who += fmt::format("{}rank {} {}", who.empty() ? "" : ", ", r, a.reports[r].substr(at));
        preempt_reports = who;
      }
    }
  };
  // One tick's part, on every rank at every tick (also the ticks a rank skips). A rank whose
  // own loss or gradient is non-finite never applies that update, under either policy; the
  // agreement then stops every rank at the same tick (stop). Under skip each rank drops its
  // own non-finite steps: with gradients averaged in after_backward every rank drops the same.
  auto tick_check = [&](const StepInfo& step, bool local_nonfinite, const Tensor* loss) {
    const int sig = preemption.received();
    std::string report;
    if (local_nonfinite) report = guard.describe(*loss);  // per tensor: only on this path
    if (sig != 0)
      report += (report.empty() ? "received " : "; received ") + preempt_signal_name(sig);
    if (local_nonfinite) {
      drop_step = true;
      if (nonfinite == NonfinitePolicy::skip && loop.nonfinite_skipped < 10)  // the first few
        progress_out << fmt::format(
            "dplab: rank {}: dropped the step at global step {} (nonfinite = skip): {}\n",
            strategy->rank(), step.global_step, report);
    }
    act_on(agreement.tick(step.global_step, local_nonfinite, sig != 0, report));
  };

  // A checkpoint of every rank (collective), once per global step, never with an inf or NaN in
  // it (tools/train/nonfinite_guard.h). In the middle of an epoch it is written without
  // strategy->drain(), which is part of the trajectory for some algorithms (comm/strategy.h): a
  // run that checkpoints follows the same trajectory as one that does not. Returns the
  // checkpoint's directory.
  int64_t last_checkpoint_step = -1;
  std::filesystem::path last_checkpoint_dir;
  auto checkpoint = [&]() -> std::filesystem::path {
    if (out_dir.empty() || last_checkpoint_step == loop.global_step) return last_checkpoint_dir;
    trace::Span traced(tracer, "checkpoint", "io");
    act_on(agreement.flush());  // every tick decided before the state check's own vote
    check_state_finite("a checkpoint");
    last_checkpoint_dir = write_checkpoint({out_dir, ckpt_keep}, ranks, run, parts, loop);
    last_checkpoint_step = loop.global_step;
    return last_checkpoint_dir;
  };
  // Mid-epoch checkpoints every checkpoint.every_steps iterations (the epoch's last step is
  // checkpointed after end_epoch, with the epoch finished).
  auto step_checkpoint = [&]() {
    if (ckpt_every_steps > 0 && loop.global_step % ckpt_every_steps == 0 &&
        loop.step_in_epoch < steps_per_epoch)
      checkpoint();
  };
  // Pre-empted (tools/train/preemption.h): checkpoint (collective, committed by rank 0 before
  // any rank returns), record, then RunStopped on every rank (exit 4).
  auto preempt_exit = [&](const std::string& reports) {
    const std::string path = checkpoint().string();
    if (rank0)
      metrics.write({{"kind", "preempted"},
                     {"epoch", loop.epoch + 1},
                     {"step", loop.global_step},
                     {"step_in_epoch", loop.step_in_epoch},
                     {"detail", reports},
                     {"checkpoint", path}});
    agreement.barrier();
    finish_run_trace(tracer, ranks, out_dir, &progress_out);  // the trace so far, merged
    throw RunStopped(fmt::format("pre-empted ({}) after {} step{}: wrote {}; continue with "
                                 "--resume {} (exit status {})",
                                 reports, loop.global_step, loop.global_step == 1 ? "" : "s", path,
                                 out_dir, kExitPreempted),
                     kExitPreempted, rank0);
  };

  // ---- the loop (call points as in comm/strategy.h) -----------------------------------------
  while (loop.epoch < epochs && !stop) {
    const int64_t epoch = loop.epoch;
    pipeline.start_epoch(epoch, loop.step_in_epoch, tracer, loop.global_step - loop.step_in_epoch);
    strategy->begin_epoch(epoch);
    progress.begin_epoch(epoch, epochs, steps_per_epoch, loop.step_in_epoch);
    const auto t_epoch = Clock::now();
    step_log.begin_epoch(loop, *strategy, comm_tally);
    int64_t epoch_images = 0;
    int64_t epoch_computed = 0;
    const double slept_before = slowdown.total_slept_s();
    Batch b;
    StepTrace step_trace(tracer);  // step and data_wait events
    while (step_trace.next(pipeline.batches(), b, loop.global_step)) {
      step_log.batch_ready();
      StepInfo step;
      step.epoch = epoch;
      step.step_in_epoch = loop.step_in_epoch;
      step.global_step = loop.global_step;
      step.steps_per_epoch = steps_per_epoch;
      step.total_epochs = epochs;
      optimizer.set_lr(base_lr * schedule->factor(loop.global_step, steps_per_epoch));

      const StepPlan plan = strategy->plan(step);
      DPLAB_CHECK(!(plan.strategy_update && nonfinite == NonfinitePolicy::skip),
                  "option nonfinite = skip: algorithm '{}' applies its update inside "
                  "after_backward, before the check, so a step cannot be dropped; use nonfinite "
                  "= stop",
                  strategy->name());
      if (!plan.compute) {                 // this rank skips the tick (its batch is dropped)
        tick_check(step, false, nullptr);  // the others may be computing: same tick sequence
        strategy->after_step(step);
        step_trace.end(epoch, 0);
        ++skipped_steps;
        ++loop.step_in_epoch;
        ++loop.global_step;
        step_log.step_done(loop, 0, optimizer.lr(), step_metrics, *strategy, comm_tally);
        if (max_steps > 0 && loop.optimizer_steps + skipped_steps >= max_steps) {
          stop = true;
          break;
        }
        step_checkpoint();
        if (preempted) break;
        continue;
      }
      if (plan.zero_grad && accumulation.first(loop.global_step)) optimizer.zero_grad();
      strategy->before_forward(step);
      slowdown.start();
      trace::Span forward_span(tracer, "forward", "compute", trace::kCompute, true);
      Tensor logits;
      {
        AutocastGuard autocast(amp_dtype);  // f32 (off) unless amp is set
        logits = model->forward(b.images);
      }
      Tensor loss = cross_entropy(logits, b.labels, label_smoothing);
      forward_span.end();
      trace::Span backward_span(tracer, "backward", "compute", trace::kCompute, true);
      backward(scaler ? scaler->scale_loss(accumulation.scale(loss)) : accumulation.scale(loss));
      backward_span.end();
      slowdown.stop();
      strategy->after_backward(step);
      // The (averaged) gradients and the loss checked; the ranks agree on it kLag ticks later.
      const bool tick_nonfinite = guard.step_nonfinite(loss);
      tick_check(step, tick_nonfinite, &loss);
      slowdown.start();
      trace::Span optimizer_span(tracer, "optimizer", "compute", trace::kCompute, true);
      if (plan.optimizer_step && accumulation.last(loop.global_step) && drop_step) {
        optimizer.zero_grad();  // nonfinite = skip: no update; no later step sees these
        drop_step = false;
        ++loop.epoch_nonfinite_skipped;
        ++loop.nonfinite_skipped;
        ++loop.optimizer_steps;  // counts toward max_steps, as a loss scaler's skipped step
      } else if (plan.optimizer_step && accumulation.last(loop.global_step)) {
        if (scaler) {  // skips the step when a gradient is inf/NaN, then adjusts the scale
          scaler->step(optimizer);
          scaler->update();
        } else {
          optimizer.step();
        }
        ++loop.optimizer_steps;
      } else if (plan.strategy_update) {
        DPLAB_CHECK(!scaler,
                    "amp = f16: algorithm '{}' applies its own update, which does not unscale "
                    "gradients; use amp = bf16 or off",
                    strategy->name());
        ++loop.optimizer_steps;
      }
      optimizer_span.end();
      slowdown.pause();  // sleeps (FACTOR-1) x this iteration's compute
      strategy->after_step(step);
      step_trace.end(epoch, b.labels.numel());
      ++epoch_computed;

      const int64_t n = b.labels.numel();
      if (!tick_nonfinite) {  // a dropped step's loss is not part of the epoch's mean
        step_metrics.add(loss, logits, b.labels, loop.epoch_loss_sum, loop.epoch_correct);
        loop.epoch_seen += n;
      }
      ++loop.step_in_epoch;
      ++loop.global_step;
      epoch_images += n;
      step_log.step_done(loop, n, optimizer.lr(), step_metrics, *strategy, comm_tally);
      const double elapsed = seconds_since(t_epoch);
      if (step_metrics.pending() && progress.will_draw(loop.step_in_epoch))
        step_metrics.flush(loop.epoch_loss_sum, loop.epoch_correct);
      progress.update(loop.step_in_epoch, loop.epoch_loss_sum / double(loop.epoch_seen),
                      elapsed > 0 ? double(epoch_images) / elapsed : 0.0);
      if (max_steps > 0 && loop.optimizer_steps + skipped_steps >= max_steps) {
        stop = true;
        break;
      }
      step_checkpoint();
      if (preempted) break;  // this step is done on every rank
    }
    act_on(agreement.flush());  // every tick so far agreed on (stop, pre-emption)
    step_metrics.flush(loop.epoch_loss_sum, loop.epoch_correct);
    const double epoch_time = seconds_since(t_epoch);
    progress.end_epoch();

    const bool epoch_done = loop.step_in_epoch >= steps_per_epoch;
    // Pre-empted in the middle of an epoch (and not at the end of training): checkpoint at
    // once, without finish_training() or an evaluation: the grace period is short.
    if (preempted && !stop && !epoch_done) preempt_exit(preempt_reports);
    const double mean_loss = loop.epoch_seen ? loop.epoch_loss_sum / double(loop.epoch_seen) : 0;
    const int64_t epoch_nonfinite_skipped = loop.epoch_nonfinite_skipped;  // for the record
    const RankEpoch rank_epoch{epoch_images, loop.epoch_seen, loop.epoch_loss_sum,
                               loop.epoch_correct, epoch_time};
    if (epoch_done) {
      strategy->end_epoch(epoch, mean_loss);
      schedule->observe_epoch(mean_loss);
      loop.epoch_losses.push_back(mean_loss);
      ++loop.epoch;
      loop.step_in_epoch = 0;
      loop.epoch_loss_sum = 0;
      loop.epoch_correct = 0;
      loop.epoch_seen = 0;
      loop.epoch_nonfinite_skipped = 0;
      result.epochs_done = loop.epoch;
    }
    const bool last = stop || (epoch_done && epoch + 1 == epochs);
    // The end's checkpoint holds the state before finish_training, so a resumed run that
    // trains further continues exactly as an uninterrupted longer run; a stop in the middle of
    // an epoch is saved before the drain (an uninterrupted run does not drain there).
    const bool save = last || (epoch_done && ckpt_every > 0 && loop.epoch % ckpt_every == 0) ||
                      (ckpt_every_steps > 0 && loop.global_step % ckpt_every_steps == 0);
    if (save && !epoch_done) checkpoint();
    strategy->drain();  // nothing in flight before evaluation (and epoch-end checkpoints)
    if (save && epoch_done) checkpoint();
    // End of training: an algorithm whose ranks diverge builds its final model here, once.
    if (last) {
      strategy->finish_training();
      strategy->drain();
    }
    trace::Span eval_span(tracer, "eval", "compute");
    eval_span.without_step();
    eval_span.arg("epoch", double(epoch + 1));
    const EvalResult ev = evaluate(*model, data.test, eval_opt);
    eval_span.end();
    evaluated = true;
    last_epoch_number = epoch + 1;
    const CommStats comm = comm_tally.epoch(*strategy);  // before the consensus model's own
    // Gossip algorithms: the consensus average as a second evaluated model (collective).
    std::optional<EvalResult> ev_consensus;
    strategy->consensus_eval([&] { ev_consensus = evaluate(*model, data.test, eval_opt); });
    EpochFacts ef;
    ef.epoch = epoch + 1;
    ef.epochs = epochs;
    ef.complete = epoch_done;
    ef.step = loop.global_step;
    ef.mine = rank_epoch;
    ef.computed_steps = epoch_computed;
    ef.lr = optimizer.lr();
    ef.comm = comm;
    ef.ev = ev;
    ef.consensus = ev_consensus;
    ef.algo_state = strategy->state();
    ef.nonfinite_skipped = epoch_nonfinite_skipped;
    ef.slowdown = slowdown.factor();
    ef.slowdown_sleep_s = slowdown.total_slept_s() - slept_before;
    // Collective: loss, accuracy and images/s over every rank (the records' and the result's).
    const GlobalEpoch global = report.epoch(ef, summary);
    result.train_loss = global.loss();
    result.train_acc = global.train_acc();
    result.test_acc = ev.accuracy;
    result.test_loss = ev.loss;
    result.test_acc5 = ev.top5 ? ev.accuracy5 : -1;
    // Pre-empted at the last step of an epoch: the epoch ended as usual (checkpoint policy,
    // evaluation, record); the pre-emption checkpoint is this step's (written now if the policy
    // did not).
    if (preempted && !stop && loop.epoch < epochs) preempt_exit(preempt_reports);
  }

  if (!evaluated) {  // resumed from a finished run: its checkpoint, then its final model
    checkpoint();
    strategy->finish_training();
  }
  strategy->drain();
  if (!evaluated) {  // resumed from a finished run: report its model
    const EvalResult ev = evaluate(*model, data.test, eval_opt);
    result.test_acc = ev.accuracy;
    result.test_loss = ev.loss;
    result.test_acc5 = ev.top5 ? ev.accuracy5 : -1;
  }
  result.epochs_done = loop.epoch;
  result.global_step = loop.global_step;
  result.images_per_s = report.total_images_per_s();
  result.time_s = seconds_since(t_start);
  result.nonfinite_skipped_steps = loop.nonfinite_skipped;
  // The final model with PyTorch names (rank 0's: the one evaluated), for eval and PyTorch;
  // checked for inf/NaN on every rank first (finish_training may have changed it).
  if (!out_dir.empty()) {
    check_state_finite("final.safetensors");
    if (rank0) {
      const auto path = std::filesystem::path(out_dir) / "final.safetensors";
      export_model(path, *model, model_name, loop, dataset_class_names(*data.train));
      result.final_checkpoint = path.string();
    }
  }
  FinalFacts ff;
  ff.epoch = last_epoch_number;
  ff.epochs_completed = loop.epoch;
  ff.step = loop.global_step;
  ff.test_loss = result.test_loss;
  ff.test_acc = result.test_acc;
  ff.test_acc5 = result.test_acc5;
  ff.nonfinite_skipped = loop.nonfinite_skipped;
  report.final(ff);
  finish_run_trace(tracer, ranks, out_dir);  // OUT/trace.json (rank 0), after every rank's file
  return result;
}

EvalReport run_evaluation(const Options& opt) {
  return run_evaluation(opt, Registry::with_builtins());
}

EvalReport run_evaluation(const Options& opt, const Registry& registry) {
  apply_thread_option(get_int(opt, "threads"));
  const std::string checkpoint = opt.require_string("checkpoint");
  const int64_t eval_batch = get_int(opt, "eval.batch");
  const std::string name = get(opt, "data");
  const DatasetEntry& entry = registry.dataset(name);
  // IDX data: the test split alone; images: the evaluation set named (data.val, DIR/val of a
  // folder:DIR with train/ and val/, else --data itself); any other data set builds both.
  const std::shared_ptr<Dataset> test = entry.name == "*" ? load_idx_test(name, opt)
                                        : (entry.name == "shards:" || entry.name == "folder:")
                                            ? load_image_eval_data(name, opt)
                                            : entry.make(name, opt).test;
  // The model: --model when given, else the one the checkpoint records (tools/train/model_file.h).
  const ModelWeights weights = read_model_weights(checkpoint);
  const std::string model_name = model_for_file(opt.has("model") ? get(opt, "model") : "", weights);
  const int file_classes = classes_in_file(weights);
  auto model = registry.make_model(
      model_name, ModelArgs{0, file_classes > 0 ? file_classes : test->num_classes(), false, &opt});
  load_model_file(weights, *model, model_name);
  EvalOptions eval_opt;
  eval_opt.batch_size = eval_batch;
  eval_opt.workers = int(get_int(opt, "data.workers"));
  eval_opt.prefetch = int(get_int(opt, "data.prefetch"));
  check_no_unknown_options(opt);
  // Under mpiexec the ranks split the test set (each loads the checkpoint itself).
  std::shared_ptr<Communicator> comm;
  if (launched_ranks() > 1) comm = eval_world(opt);
  eval_opt.comm = comm.get();
  const EvalResult r = evaluate(*model, test, eval_opt);
  EvalReport report{r.accuracy, r.loss, r.correct, r.count};
  report.top5 = r.top5;
  report.accuracy5 = r.accuracy5;
  report.correct5 = r.correct5;
  report.is_rank0 = !comm || comm->rank() == 0;
  return report;
}

}  // namespace dplab
