#include "dplab/train/loop/trainer.h"

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
#include "dplab/core/usage_error.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/schedule.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/config/builtin_datasets.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/plugin_loader.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/config/setting_warnings.h"
#include "dplab/train/config/train_settings.h"
#include "dplab/train/data/data_pipeline.h"
#include "dplab/train/data/eval_split.h"
#include "dplab/train/data/evaluate.h"
#include "dplab/train/loop/accumulation.h"
#include "dplab/train/loop/model_parts.h"
#include "dplab/train/loop/nonfinite_guard.h"
#include "dplab/train/loop/optimizer_options.h"
#include "dplab/train/loop/preemption.h"
#include "dplab/train/loop/step_agreement.h"
#include "dplab/train/loop/train_loop.h"
#include "dplab/train/report/epoch_record.h"
#include "dplab/train/report/metrics.h"
#include "dplab/train/report/progress.h"
#include "dplab/train/report/run_record.h"
#include "dplab/train/report/run_trace.h"
#include "dplab/train/report/step_metrics.h"
#include "dplab/train/report/step_record.h"
#include "dplab/train/state/checkpoint.h"
#include "dplab/train/state/model_file.h"
#include "dplab/train/state/run_lock.h"
#include "dplab/train/virtual/virtual_run.h"

namespace dplab {
namespace {

using Clock = std::chrono::steady_clock;

std::string get(const Options& opt, const std::string& key) {
  return opt.get_string(key, option_default(key));
}
int64_t get_int(const Options& opt, const std::string& key) {
  return opt.get_int(key, std::stoll(option_default(key)));
}

// The run header's and run.json's facts (train/report/run_record.h).
RunFacts run_facts(const TrainSettings& set, Module& model, const Strategy& strategy,
                   int64_t accumulate_steps, Device device, const TrainData& data,
                   std::chrono::system_clock::time_point start) {
  RunFacts f;
  f.model = set.model_name;
  for (const NamedTensor& p : model.named_parameters()) f.parameters += p.tensor.numel();
  f.algo = strategy.name();
  f.batch = set.batch;
  f.accumulate_steps = accumulate_steps;
  f.device = device.str();
  f.threads = omp_get_max_threads();
  f.data = set.data_spec;
  f.train_samples = data.train->size();
  f.test_samples = data.test->size();
  f.start = start;
  return f;
}

// The driver's ranks: their exchanges (epoch records, ...) wait comm.timeout_s, as every
// collective does, so a stopped rank is named as fast there. A single process has no peers and
// leaves the key unread (a key nobody reads is an error).
RankGroup rank_group(int rank, int size, const Options& opt) {
  if (size == 1) return RankGroup(rank, size);
  return RankGroup(rank, size,
                   opt.get_double("comm.timeout_s", std::stod(option_default("comm.timeout_s"))));
}

}  // namespace

void apply_thread_option(int64_t threads) {
  DPLAB_CHECK_OPTION(threads >= 0, "option threads: expected >= 0, got {}", threads);
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
  // Under a virtual cluster a rank computes on one thread, on the CPU
  // (train/virtual/virtual_run.h).
  apply_thread_option(check_cluster_run(opt, get_int(opt, "threads")));

  // ---- set-up: read every option before the first step, so typos fail fast ---------------
  const TrainSettings set = read_train_settings(opt);
  // Option plugins names what `registry` holds (dplab train loaded them; plugin_loader.h).
  check_plugins_loaded(get(opt, "plugins"), registry);
  // A one-process algorithm under mpiexec -n N would be N copies writing one out directory.
  check_launch(registry.strategy(get(opt, "algo")), launched_ranks());
  // One run per output directory, before anything is read or written (train/state/run_lock.h).
  // The world here is MPI's, as the algorithm's will be (check_launch).
  RunLocks locks = lock_run_dirs(
      set.loop.out_dir, set.resume,
      mpi_active() ? rank_group(MpiEnv::get().world_rank(), MpiEnv::get().world_size(), opt)
                   : RankGroup(0, 1),
      progress_out);
  // Installed at once, so a signal during set-up (data indexing can take minutes) is not lost.
  PreemptionSignals preemption(set.preempt_signals);
  const Device device = set_up_train_device(opt, registry);

  // Data, model, optimizer, schedule and algorithm by name from `registry` (registry.h).
  const TrainData data = registry.dataset(set.data_spec).make(set.data_spec, opt);
  // Model, arena, optimizer and loss scaler (train/loop/model_parts.h).
  ModelParts built = build_model_parts(opt, registry, set.model_name, data, set.seed, set.init_from,
                                       device, set.f16);
  const GradAccumulation accumulation(set.accumulate_steps);
  // Summing micro-batch gradients commutes only with averaging algorithms.
  check_accumulation(registry.strategy(get(opt, "algo")), accumulation.steps());
  std::unique_ptr<LrSchedule> schedule =
      registry.schedule(get(opt, "lr.schedule")).make(opt, set.loop.epochs);

  // --cluster: the rank's virtual clock, built before the algorithm's world, which runs on it;
  // every time figure below is then on it (train/virtual/virtual_run.h, run_clock.h).
  const std::unique_ptr<VirtualRun> cluster_run =
      make_virtual_run(opt, device, set.model_name, set.batch, *built.arena);
  RunClock clock = cluster_run ? RunClock(cluster_run->time(), cluster_run->time_base(), t_start)
                               : RunClock(t_start);
  // Timeline (train/report/run_trace.h): outlives the strategy, whose threads record into it.
  const std::unique_ptr<trace::Tracer> run_tracer = make_run_tracer(opt, set.loop.out_dir, device);
  trace::Tracer* const tracer = run_tracer.get();
  if (tracer) tracer->set_time(clock.source(), clock.time_base());
  const std::unique_ptr<Strategy> strategy =
      set_up_strategy(opt, registry, built, tracer, clock.source(),
                      cluster_run ? cluster_run->shared_virtual_time() : nullptr);
  const RankGroup ranks = rank_group(strategy->rank(), strategy->world_size(), opt);
  // Every rank learns whether any rank saw a non-finite value or a pre-emption signal, kLag
  // ticks later (a non-blocking 8-byte allreduce per tick; train/loop/step_agreement.h).
  // Collective construction.
  StepAgreement agreement(opt, ranks.size());
  // Under amp = f16 the loss scaler owns inf/NaN gradients; the guard then checks the loss.
  NonfiniteGuard guard(*built.arena, !built.scaler);
  // --slowdown RANK=FACTOR: this rank's compute is stretched by sleeping (comm/slowdown.h).
  Slowdown slowdown = Slowdown::from_options(opt, ranks.rank(), ranks.size());
  if (cluster_run) slowdown.set_virtual();  // multiplies virtual compute instead of sleeping

  // This rank's batches: sampler or shard stream, loader workers, device upload
  // (train/data/data_pipeline.h).
  DataPipeline pipeline(
      data.train, DataPipelineOptions::from(opt, ranks.rank(), ranks.size(), set.seed, set.batch),
      device);
  // Evaluation: split across the ranks on a communicator of its own, with the loader's workers
  // (train/data/evaluate.h); eval.batch 0 is the training batch, capped by the image size.
  std::shared_ptr<Communicator> eval_comm;
  if (ranks.size() > 1) eval_comm = eval_world(opt);
  EvalOptions eval_opt;
  eval_opt.batch_size = set.eval_batch > 0
                            ? set.eval_batch
                            : training_eval_batch(data.test->sample_shape(), set.batch);
  eval_opt.workers = pipeline.options().workers;
  eval_opt.prefetch = pipeline.options().prefetch;
  eval_opt.comm = eval_comm.get();
  // A batch larger than a rank's share: said once (train/config/setting_warnings.h).
  if (const std::string w = batch_warning(set.batch, pipeline.rank_samples());
      !w.empty() && ranks.rank() == 0)
    progress_out << w << "\n";

  // Every option read so far that changes the trajectory; the checkpoints store it.
  RunIdentity run;
  run.algo = strategy->name();
  run.ranks_per_node = opt.get_string("ranks_per_node", "0");
  run.init_from = set.init_from;
  run.config = trajectory_config(opt);
  // epochs is a [run] option unless something is planned from it (RunIdentity).
  if (const std::string s = schedule->planned_from_epochs(); !s.empty())
    run.planned_from_epochs.push_back(s);
  for (std::string& s : strategy->planned_from_epochs())
    run.planned_from_epochs.push_back(std::move(s));
  if (!run.planned_from_epochs.empty()) run.config["epochs"] = std::to_string(set.loop.epochs);
  run.batch = set.batch;
  // After the last option read: every key the run reads, run.json's included, is known here
  // (a run.json whose keys were read only after this check could not be a --config).
  check_no_unknown_options(opt, &registry);
  const int64_t steps_per_epoch = pipeline.steps_per_epoch();
  RunPlan plan;
  plan.epochs = set.loop.epochs;
  plan.steps_per_epoch = steps_per_epoch;
  plan.steps = set.loop.max_steps > 0 ? std::min(set.loop.epochs * steps_per_epoch,
                                                 set.loop.max_steps * accumulation.steps())
                                      : set.loop.epochs * steps_per_epoch;
  start_run_trace(tracer, ranks, opt, plan.steps);
  RunFacts facts =
      run_facts(set, *built.model, *strategy, accumulation.steps(), device, data, start_time);
  facts.eval_batch = eval_opt.batch_size;
  const OptimizerEntry& optim = registry.optimizer(get(opt, "optim"));
  facts.optimizer = optim.name;
  facts.optimizer_defaults_from = optim.defaults_from;
  facts.optimizer_defaulted = optimizer_defaulted(opt, optim);
  facts.base_lr = built.base_lr;
  // The algorithm's own line for the header, from its declaration (StrategyEntry::run_note).
  if (const StrategyEntry& algo = registry.strategy(get(opt, "algo")); algo.run_note)
    facts.algo_note =
        algo.run_note(opt, set.batch * ranks.size() * accumulation.steps(), built.base_lr);
  facts.plugins = registry.plugins();
  if (cluster_run) cluster_facts(*cluster_run, facts);
  record_run_start(opt, ranks, facts, summary);
  // The algorithm's phases in this run: notes under the header, warnings to stderr for a phase
  // that never starts (comm/strategy.h, plan_notes).
  if (ranks.rank() == 0)
    for (const std::string& n : strategy->plan_notes(plan))
      (n.starts_with("warning: ") ? progress_out : summary) << n << "\n";
  TrainingParts parts{built.model.get(), built.optimizer.get(), strategy.get(), schedule.get(),
                      built.scaler.get()};
  const LoopState start = set.resume.empty()
                              ? LoopState{}
                              : resume_run(set.resume, set.resume_overrides, ranks, run, parts,
                                           steps_per_epoch, summary, progress_out, set.reshard);
  // run.json: the world sizes so far (a --reshard resume adds one; train/state/reshard.h).
  record_world_sizes(
      opt, ranks,
      run.world_sizes.empty() ? std::vector<WorldSpan>{{0, ranks.size()}} : run.world_sizes);
  locks.resume.reset();  // read: another run may resume from it too

  // Records and progress; elapsed_s continues from the resumed run's checkpoint.
  ReportingOptions ro;
  ro.out_dir = set.loop.out_dir;
  ro.append = !set.resume.empty();
  ro.metrics_every_steps = set.metrics_every_steps;
  ro.progress = set.progress;
  ro.every_percent = set.every_percent;
  // A virtual clock goes on from the checkpoint's reading instead (the events' windows are on
  // it); the wall clock restarts at 0 and is offset.
  if (cluster_run && !set.resume.empty()) cluster_run->continue_at(start.elapsed_s);
  const RunClock::Mark origin{cluster_run ? 0.0 : -start.elapsed_s, -start.elapsed_s};
  RunReporting reporting(ro, ranks, std::move(clock), origin, summary, progress_out);

  LoopSettings loop_settings = set.loop;
  loop_settings.base_lr = built.base_lr;
  loop_settings.device = device;
  TrainLoop loop(loop_settings,
                 LoopParts{*built.model, *built.optimizer, built.scaler.get(), *strategy, *schedule,
                           accumulation, pipeline, data, eval_opt, tracer},
                 LoopWatch{agreement, guard, slowdown, preemption, cluster_run.get()}, reporting,
                 ranks, run, start);
  TrainResult result = loop.run();
  // Fail events the run went on after: the time lost and the recovery, as the final record has
  // them, in run.json and the summary (before the CLI's test accuracy line).
  if (const TrainLoop::Failures& f = loop.failures(); f.any) {
    record_failures(opt, ranks, f.lost_rank_s, f.recovery_s);
    if (ranks.rank() == 0) summary << failure_summary(f.lost_rank_s, f.recovery_s);
  }
  const RunClock::Mark end = reporting.clock().now();  // this process's
  result.time_s = end.t;
  result.wall_s = end.wall;
  result.time_base = reporting.clock().time_base();
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
  // The model: --model when given, else the one the checkpoint records (train/state/model_file.h).
  const ModelWeights weights = read_model_weights(checkpoint);
  const std::string model_name = model_for_file(opt.has("model") ? get(opt, "model") : "", weights);
  const int file_classes = classes_in_file(weights);
  auto model = registry.make_model(
      model_name,
      ModelArgs{0, file_classes > 0 ? file_classes : test->num_classes(), false, &opt,
                // a ResNet's stem as trained; other models keep theirs, so that a
                // mismatched file is reported by the load below
                registry.model(model_name).any_channels ? channels_in_file(weights) : -1});
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
