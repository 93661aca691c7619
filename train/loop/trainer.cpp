#include "dplab/train/loop/trainer.h"
#include "dplab/comm/comm_options.h"

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
  return train_option_table().get_string(opt, key);
}
int64_t get_int(const Options& opt, const std::string& key) {
  return train_option_table().get_int(opt, key);
}

// The driver's ranks: their exchanges (epoch records, ...) wait comm.timeout_s, as every
// collective does, so a stopped rank is named as fast there. A single process has no peers and
// leaves the key unread (a key nobody reads is an error).
RankGroup rank_group(int rank, int size, const Options& opt) {
  if (size == 1) return RankGroup(rank, size);
  return RankGroup(rank, size, communicator_option_table().get_double(opt, "comm.timeout_s"));
}

}  // namespace

void apply_thread_option(int64_t threads) {
  DPLAB_CHECK_OPTION(threads >= 0, "option threads: expected >= 0, got {}", threads);
  if (threads > 0) omp_set_num_threads(int(threads));
  // Default under mpiexec: the ranks on this host share its cores (comm/mpi_env.h).
  if (threads == 0 && local_ranks_hint() > 1)
    omp_set_num_threads(std::max(1, omp_get_num_procs() / local_ranks_hint()));
}

// Everything a run holds, in the order it is built (and destroyed in reverse: the loop before
// the parts it borrows, the strategy, whose threads record into the tracer, before the tracer).
struct Trainer::Impl {
  Options opt;  // the run's own copy: the keys read are marked here
  std::ostream& summary;
  std::ostream& progress;
  Clock::time_point t_start = Clock::now();
  std::chrono::system_clock::time_point start_time = std::chrono::system_clock::now();
  TrainSettings set;
  RunLocks locks;
  std::unique_ptr<PreemptionSignals> preemption;
  Device device;
  TrainerParts parts;
  std::unique_ptr<GradAccumulation> accumulation;
  std::unique_ptr<VirtualRun> cluster_run;
  std::unique_ptr<trace::Tracer> tracer;
  std::optional<RankGroup> ranks;
  std::unique_ptr<StepAgreement> agreement;
  std::unique_ptr<NonfiniteGuard> guard;
  std::optional<Slowdown> slowdown;
  std::unique_ptr<DataPipeline> pipeline;
  std::shared_ptr<Communicator> eval_comm;
  EvalOptions eval_opt;
  RunIdentity run;
  std::unique_ptr<RunReporting> reporting;
  LoopSettings loop_settings;
  std::unique_ptr<TrainLoop> loop;
  bool finished = false;
  TrainResult result;

  Impl(const Options& o, std::ostream& s, std::ostream& p) : opt(o), summary(s), progress(p) {}
  void build(const Registry* registry, const PartsMaker& make_parts);
  void check_parts(bool from_registry) const;
  void set_up_algorithm(RunClock& clock);
  RunFacts facts(const Registry* registry) const;
  TrainResult finish();
};

void Trainer::Impl::build(const Registry* registry, const PartsMaker& make_parts) {
  // Under a virtual cluster a rank computes on one thread, on the CPU
  // (train/virtual/virtual_run.h).
  apply_thread_option(check_cluster_run(opt, get_int(opt, "threads")));
  // ---- set-up: read every option before the first step, so typos fail fast ---------------
  set = read_train_settings(opt);
  if (registry) {
    // Option plugins names what `registry` holds (dplab train loaded them; plugin_loader.h).
    check_plugins_loaded(get(opt, "plugins"), *registry);
    // A one-process algorithm under mpiexec -n N would be N copies writing one out directory.
    check_launch(registry->strategy(get(opt, "algo")), launched_ranks());
  }
  // One run per output directory, before anything is read or written (train/state/run_lock.h).
  // The world here is MPI's, as the algorithm's will be (check_launch).
  locks = lock_run_dirs(
      set.loop.out_dir, set.resume,
      mpi_active() ? rank_group(MpiEnv::get().world_rank(), MpiEnv::get().world_size(), opt)
                   : RankGroup(0, 1),
      progress);
  // Installed at once, so a signal during set-up (data indexing can take minutes) is not lost.
  preemption = std::make_unique<PreemptionSignals>(set.preempt_signals);
  // The device first: the parts are built on it.
  device = registry ? set_up_train_device(opt, *registry) : set_up_train_device(opt, true);
  parts = make_parts(opt, device);
  check_parts(registry != nullptr);
  accumulation = std::make_unique<GradAccumulation>(set.accumulate_steps);
  // Summing micro-batch gradients commutes only with averaging algorithms.
  StrategyEntry traits;
  traits.name = parts.strategy ? parts.strategy->name() : get(opt, "algo");
  traits.averages_gradients = parts.averages_gradients;
  check_accumulation(traits, accumulation->steps());
  // No schedule: the factor is 1 throughout (an empty Options is lr.schedule = constant).
  if (!parts.schedule) parts.schedule = make_lr_schedule(Options{}, set.loop.epochs);
  if (set.f16 && !parts.scaler)
    parts.scaler = std::make_unique<GradScaler>(parts.optimizer->arena());

  // --cluster: the rank's virtual clock, built before the algorithm's world, which runs on it;
  // every time figure below is then on it (train/virtual/virtual_run.h, run_clock.h).
  cluster_run = make_virtual_run(opt, device, set.model_name, set.batch, *parts.arena);
  RunClock clock = cluster_run ? RunClock(cluster_run->time(), cluster_run->time_base(), t_start)
                               : RunClock(t_start);
  // Timeline (train/report/run_trace.h): outlives the strategy, whose threads record into it.
  tracer = make_run_tracer(opt, set.loop.out_dir, device);
  if (tracer) tracer->set_time(clock.source(), clock.time_base());
  set_up_algorithm(clock);
  Strategy& strategy = *parts.strategy;
  ranks.emplace(rank_group(strategy.rank(), strategy.world_size(), opt));
  // Every rank learns whether any rank saw a non-finite value or a pre-emption signal, kLag
  // ticks later (a non-blocking 8-byte allreduce per tick; train/loop/step_agreement.h).
  // Collective construction.
  agreement = std::make_unique<StepAgreement>(opt, ranks->size());
  // Under amp = f16 the loss scaler owns inf/NaN gradients; the guard then checks the loss.
  guard = std::make_unique<NonfiniteGuard>(*parts.arena, !parts.scaler);
  // --slowdown RANK=FACTOR: this rank's compute is stretched by sleeping (comm/slowdown.h).
  slowdown.emplace(Slowdown::from_options(opt, ranks->rank(), ranks->size()));
  if (cluster_run) slowdown->set_virtual();  // multiplies virtual compute instead of sleeping

  // This rank's batches: sampler or shard stream, loader workers, device upload
  // (train/data/data_pipeline.h).
  pipeline = std::make_unique<DataPipeline>(
      parts.data.train,
      DataPipelineOptions::from(opt, ranks->rank(), ranks->size(), set.seed, set.batch), device);
  // Evaluation: split across the ranks on a communicator of its own, with the loader's workers
  // (train/data/evaluate.h); eval.batch 0 is the training batch, capped by the image size.
  if (ranks->size() > 1) eval_comm = eval_world(opt);
  eval_opt.batch_size = set.eval_batch > 0
                            ? set.eval_batch
                            : training_eval_batch(parts.data.test->sample_shape(), set.batch);
  eval_opt.workers = pipeline->options().workers;
  eval_opt.prefetch = pipeline->options().prefetch;
  eval_opt.comm = eval_comm.get();
  // A batch larger than a rank's share: said once (train/config/setting_warnings.h).
  if (const std::string w = batch_warning(set.batch, pipeline->rank_samples());
      !w.empty() && ranks->rank() == 0)
    progress << w << "\n";

  // Every option read so far that changes the trajectory; the checkpoints store it.
  run.algo = strategy.name();
  run.ranks_per_node = communicator_option_table().get_string(opt, "ranks_per_node");
  run.init_from = set.init_from;
  run.config = trajectory_config(opt);
  // epochs is a [run] option unless something is planned from it (RunIdentity).
  if (const std::string s = parts.schedule->planned_from_epochs(); !s.empty())
    run.planned_from_epochs.push_back(s);
  for (std::string& s : strategy.planned_from_epochs())
    run.planned_from_epochs.push_back(std::move(s));
  if (!run.planned_from_epochs.empty()) run.config["epochs"] = std::to_string(set.loop.epochs);
  run.batch = set.batch;
  // After the last option read: every key the run reads, run.json's included, is known here
  // (a run.json whose keys were read only after this check could not be a --config).
  check_no_unknown_options(opt, registry);
  const int64_t steps_per_epoch = pipeline->steps_per_epoch();
  RunPlan plan;
  plan.epochs = set.loop.epochs;
  plan.steps_per_epoch = steps_per_epoch;
  plan.steps = set.loop.max_steps > 0 ? std::min(set.loop.epochs * steps_per_epoch,
                                                 set.loop.max_steps * accumulation->steps())
                                      : set.loop.epochs * steps_per_epoch;
  start_run_trace(tracer.get(), *ranks, opt, plan.steps);
  record_run_start(opt, *ranks, facts(registry), summary);
  // The algorithm's phases in this run: notes under the header, warnings to stderr for a phase
  // that never starts (comm/strategy.h, plan_notes).
  if (ranks->rank() == 0)
    for (const std::string& n : strategy.plan_notes(plan))
      (n.starts_with("warning: ") ? progress : summary) << n << "\n";
  TrainingParts saved{parts.model.get(), parts.optimizer.get(), &strategy, parts.schedule.get(),
                      parts.scaler.get()};
  const LoopState start = set.resume.empty()
                              ? LoopState{}
                              : resume_run(set.resume, set.resume_overrides, *ranks, run, saved,
                                           steps_per_epoch, summary, progress, set.reshard);
  // run.json: the world sizes so far (a --reshard resume adds one; train/state/reshard.h).
  record_world_sizes(
      opt, *ranks,
      run.world_sizes.empty() ? std::vector<WorldSpan>{{0, ranks->size()}} : run.world_sizes);
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
  reporting =
      std::make_unique<RunReporting>(ro, *ranks, std::move(clock), origin, summary, progress);

  loop_settings = set.loop;
  loop_settings.base_lr = parts.optimizer->lr();
  loop_settings.device = device;
  loop = std::make_unique<TrainLoop>(
      loop_settings,
      LoopParts{*parts.model, *parts.optimizer, parts.scaler.get(), strategy, *parts.schedule,
                *accumulation, *pipeline, parts.data, eval_opt, tracer.get()},
      LoopWatch{*agreement, *guard, *slowdown, *preemption, cluster_run.get()}, *reporting, *ranks,
      run, start);
}

// An experiment's parts: present, and on the run's device.
void Trainer::Impl::check_parts(bool from_registry) const {
  DPLAB_CHECK(parts.model && parts.arena && parts.optimizer,
              "Trainer: TrainerParts needs a model, its arena and an optimizer");
  DPLAB_CHECK(parts.data.train && parts.data.test,
              "Trainer: TrainerParts::data needs a training and a test set");
  DPLAB_CHECK(bool(parts.strategy) != bool(parts.make_strategy),
              "Trainer: TrainerParts needs one of strategy and make_strategy (given {})",
              parts.strategy ? "both" : "neither");
  if (from_registry) return;
  for (const NamedTensor& p : parts.model->named_parameters())
    DPLAB_CHECK(p.tensor.device() == device,
                "Trainer: parameter {} is on {}, the run's device (option device) is {}; move "
                "the model there before building its arena",
                p.name, p.tensor.device().str(), device.str());
}

// The algorithm on the ranks' Topology (built here on the run's clock for make_strategy), set
// up on the parts (collective: rank 0's parameters and buffers broadcast).
void Trainer::Impl::set_up_algorithm(RunClock& clock) {
  DPLAB_CHECK_OPTION(!parts.strategy || !cluster_run,
                     "options cluster and link.*: a virtual cluster's ranks communicate on its "
                     "clock, which the Trainer makes; give TrainerParts::make_strategy instead "
                     "of a built strategy");
  if (!parts.strategy) {
    std::shared_ptr<Topology> topo;
    if (!parts.single_process)
      topo = std::make_shared<Topology>(
          Topology::from_options(opt, cluster_run ? cluster_run->shared_virtual_time() : nullptr));
    parts.strategy = parts.make_strategy(std::move(topo), opt);
    DPLAB_CHECK(parts.strategy, "Trainer: TrainerParts::make_strategy returned no strategy");
  }
  set_up_strategy(*parts.strategy, opt, *parts.model, *parts.arena, *parts.optimizer, tracer.get(),
                  clock.source());
}

// The run header's and run.json's facts (train/report/run_record.h).
RunFacts Trainer::Impl::facts(const Registry* registry) const {
  RunFacts f;
  f.model = set.model_name;
  for (const NamedTensor& p : parts.model->named_parameters()) f.parameters += p.tensor.numel();
  f.algo = parts.strategy->name();
  f.batch = set.batch;
  f.accumulate_steps = accumulation->steps();
  f.device = device.str();
  f.threads = omp_get_max_threads();
  f.data = set.data_spec;
  f.train_samples = parts.data.train->size();
  f.test_samples = parts.data.test->size();
  f.start = start_time;
  f.eval_batch = eval_opt.batch_size;
  f.optimizer = parts.optimizer_name;
  f.base_lr = parts.optimizer->lr();
  if (registry) {
    const OptimizerEntry& optim = registry->optimizer(get(opt, "optim"));
    f.optimizer_defaults_from = optim.defaults_from;
    f.optimizer_defaulted = optimizer_defaulted(opt, optim);
    // The algorithm's own line for the header, from its declaration (StrategyEntry::run_note).
    if (const StrategyEntry& algo = registry->strategy(get(opt, "algo")); algo.run_note)
      f.algo_note =
          algo.run_note(opt, set.batch * ranks->size() * accumulation->steps(), f.base_lr);
    f.plugins = registry->plugins();
  }
  if (cluster_run) cluster_facts(*cluster_run, f);
  return f;
}

TrainResult Trainer::Impl::finish() {
  TrainResult r = loop->result();
  // Fail events the run went on after: the time lost and the recovery, as the final record has
  // them, in run.json and the summary (before the CLI's test accuracy line).
  if (const TrainLoop::Failures& f = loop->failures(); f.any) {
    record_failures(opt, *ranks, f.lost_rank_s, f.recovery_s);
    if (ranks->rank() == 0) summary << failure_summary(f.lost_rank_s, f.recovery_s);
  }
  const RunClock::Mark end = reporting->clock().now();  // this process's
  r.time_s = end.t;
  r.wall_s = end.wall;
  r.time_base = reporting->clock().time_base();
  return r;
}

Trainer::Trainer(const Options& opt, const Registry* registry, PartsMaker make_parts,
                 std::ostream& summary, std::ostream& progress)
    : impl_(std::make_unique<Impl>(opt, summary, progress)) {
  impl_->build(registry, make_parts);
}

Trainer::Trainer(TrainerParts parts, const Options& opt, std::ostream& summary,
                 std::ostream& progress)
    : impl_(std::make_unique<Impl>(opt, summary, progress)) {
  // The records' model and data are the parts' names; options that name others are refused.
  for (const auto& [key, name] :
       {std::pair{"model", parts.model_name}, std::pair{"data", parts.data_name}}) {
    DPLAB_CHECK_OPTION(!opt.has(key) || opt.get_string(key, "") == name,
                       "option {} = {}: a Trainer built from parts trains TrainerParts::{}_name "
                       "= {}",
                       key, opt.get_string(key, ""), key, name);
    impl_->opt.set(key, name);
  }
  auto handed = std::make_shared<TrainerParts>(std::move(parts));
  impl_->build(nullptr, [handed](const Options&, Device) { return std::move(*handed); });
}

std::unique_ptr<Trainer> Trainer::from_options(const Options& opt, const Registry& registry,
                                               std::ostream& summary, std::ostream& progress) {
  // Data, model, optimizer, schedule and algorithm by name from `registry` (registry.h).
  PartsMaker by_name = [&registry](const Options& o, Device device) {
    const TrainSettings set = read_train_settings(o);
    TrainerParts p;
    p.data = registry.dataset(set.data_spec).make(set.data_spec, o);
    // Model, arena, optimizer and loss scaler (train/loop/model_parts.h).
    ModelParts built = build_model_parts(o, registry, set.model_name, p.data, set.seed,
                                         set.init_from, device, set.f16);
    p.model = std::move(built.model);
    p.arena = std::move(built.arena);
    p.optimizer = std::move(built.optimizer);
    p.optimizer->set_lr(built.base_lr);  // the lr the schedule multiplies (option lr)
    p.scaler = std::move(built.scaler);
    p.schedule = registry.schedule(get(o, "lr.schedule")).make(o, set.loop.epochs);
    const StrategyEntry& entry = registry.strategy(get(o, "algo"));
    p.make_strategy = entry.make;
    p.single_process = entry.single_process;
    p.averages_gradients = entry.averages_gradients;
    p.model_name = set.model_name;
    p.data_name = set.data_spec;
    p.optimizer_name = registry.optimizer(get(o, "optim")).name;
    return p;
  };
  return std::unique_ptr<Trainer>(new Trainer(opt, &registry, by_name, summary, progress));
}

Trainer::~Trainer() = default;

TrainResult Trainer::run() {
  while (step()) {
  }
  return impl_->result;
}

bool Trainer::step() {
  if (impl_->finished) return false;
  if (impl_->loop->step()) return true;
  impl_->result = impl_->finish();
  impl_->finished = true;
  // Done: the process-wide signal handlers and the output directory's lock go now, so that a
  // later run in this process may take them while this Trainer is still alive.
  impl_->preemption->release();
  impl_->locks.out.reset();
  return false;
}

TrainResult Trainer::result() const {
  return impl_->finished ? impl_->result : impl_->loop->result();
}
const LoopState& Trainer::state() const {
  return impl_->loop->state();
}
Module& Trainer::model() {
  return *impl_->parts.model;
}
Optimizer& Trainer::optimizer() {
  return *impl_->parts.optimizer;
}
Strategy& Trainer::strategy() {
  return *impl_->parts.strategy;
}

TrainResult run_training(const Options& opt, std::ostream& summary, std::ostream& progress_out) {
  return run_training(opt, Registry::with_builtins(), summary, progress_out);
}

TrainResult run_training(const Options& opt, const Registry& registry, std::ostream& summary,
                         std::ostream& progress_out) {
  return Trainer::from_options(opt, registry, summary, progress_out)->run();
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
