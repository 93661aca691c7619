#include "dplab/tools/train/trainer.h"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/comm/slowdown.h"
#include "dplab/comm/world.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/loader.h"
#include "dplab/data/mnist.h"
#include "dplab/data/sampler.h"
#include "dplab/data/shards.h"
#include "dplab/models/registry.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/schedule.h"
#include "dplab/optim/sgd.h"
#include "dplab/tools/train/accumulation.h"
#include "dplab/tools/train/checkpoint.h"
#include "dplab/tools/train/config.h"
#include "dplab/tools/train/device_prefetch.h"
#include "dplab/tools/train/epoch_record.h"
#include "dplab/tools/train/eval_split.h"
#include "dplab/tools/train/evaluate.h"
#include "dplab/tools/train/metrics.h"
#include "dplab/tools/train/nonfinite_guard.h"
#include "dplab/tools/train/optimizer_factory.h"
#include "dplab/tools/train/preemption.h"
#include "dplab/tools/train/progress.h"
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
bool get_bool(const Options& opt, const std::string& key) {
  return opt.get_bool(key, option_default(key) == "true");
}

struct Data {
  std::shared_ptr<Dataset> train, test;
  std::shared_ptr<ShardDataset> shards;  // train data from tar shards: streamed order
  bool images = false;                   // encoded images (shards or folder), 3 x S x S
};

bool starts_with(const std::string& s, const std::string& p) {
  return s.starts_with(p);
}

// data.num_classes: 0 (not given) or the class count every label must be below.
int num_classes_option(const Options& opt) {
  const int64_t n = get_int(opt, "data.num_classes");
  DPLAB_CHECK(n >= 0 && n <= (int64_t(1) << 24),
              "option data.num_classes: expected 0 (not given) to 16777216, got {}", n);
  return int(n);
}

// MNIST-style IDX data: 10 classes unless data.num_classes says otherwise (u8 labels).
int idx_classes(const Options& opt) {
  const int n = num_classes_option(opt);
  DPLAB_CHECK(n <= 256, "option data.num_classes: IDX labels are bytes, so at most 256, got {}", n);
  return n > 0 ? n : 10;
}

// "shards:GLOB" or "folder:DIR" with the train (RandomResizedCrop + flip) or eval (Resize +
// CenterCrop) transform.
std::shared_ptr<Dataset> image_data(const std::string& spec, bool train, const Options& opt) {
  ImageTransformOptions t;
  t.size = int(get_int(opt, "data.image_size"));
  t.train = train;
  t.max_pixels = get_int(opt, "data.max_image_pixels");
  DPLAB_CHECK(t.max_pixels > 0, "option data.max_image_pixels: expected > 0, got {}", t.max_pixels);
  const OnError on_error = parse_on_error(get(opt, "data.on_error"));
  const int num_classes = num_classes_option(opt);
  if (starts_with(spec, "shards:"))
    return std::make_shared<ShardDataset>(expand_glob(spec.substr(7)), t, on_error, num_classes);
  if (starts_with(spec, "folder:")) {
    auto folder = std::make_shared<ImageFolderDataset>(spec.substr(7), t, on_error);
    DPLAB_CHECK(num_classes == 0 || folder->num_classes() <= num_classes,
                "image folder {} has {} class directories, more than data.num_classes = {}",
                spec.substr(7), folder->num_classes(), num_classes);
    return folder;
  }
  DPLAB_FAIL("option data.val '{}': expected shards:GLOB or folder:DIR", spec);
}

Data load_data(const Options& opt) {
  const std::string name = get(opt, "data");
  Data d;
  if (starts_with(name, "shards:") || starts_with(name, "folder:")) {
    d.images = true;
    std::string train_spec = name, val_spec = get(opt, "data.val");
    const std::string dir = name.substr(7);
    // folder:DIR with DIR/train and DIR/val: the usual ImageNet layout.
    if (starts_with(name, "folder:") && std::filesystem::is_directory(dir + "/train") &&
        std::filesystem::is_directory(dir + "/val")) {
      train_spec = "folder:" + dir + "/train";
      if (val_spec.empty()) val_spec = "folder:" + dir + "/val";
    }
    d.train = image_data(train_spec, true, opt);
    d.shards = std::dynamic_pointer_cast<ShardDataset>(d.train);
    if (val_spec.empty()) {
      std::fprintf(stderr, "dplab train: no data.val given: evaluating on the training data\n");
      val_spec = train_spec;
    }
    d.test = image_data(val_spec, false, opt);
    return d;
  }
  std::string dir = get(opt, "data.dir");
  if (dir.empty()) dir = find_dataset_dir(name);
  d.train = load_mnist(dir, "train", get_int(opt, "data.train_limit"), idx_classes(opt));
  d.test = load_mnist(dir, "test", get_int(opt, "data.test_limit"), idx_classes(opt));
  return d;
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
  const auto t_start = Clock::now();
  const auto start_time = std::chrono::system_clock::now();  // the run record's start_time
  apply_thread_option(get_int(opt, "threads"));

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

  Data data = load_data(opt);
  const ModelInfo info = model_info(model_name);
  // Image data: the model's channels must match; convolutional models take any H x W.
  const bool shape_ok = data.images ? !info.input_shape.empty() &&
                                          info.input_shape[0] == data.train->sample_shape()[0]
                                    : info.input_shape == data.train->sample_shape();
  DPLAB_CHECK(shape_ok, "model {} takes inputs of shape {}, dataset {} has samples of shape {}",
              model_name, shape_str(info.input_shape), get(opt, "data"),
              shape_str(data.train->sample_shape()));
  auto model = make_model(model_name, seed, data.train->num_classes(),
                          get_bool(opt, "model.zero_init_residual"));
  model->train();
  // --init-from: a new run from a checkpoint's weights (before setup, which broadcasts them).
  if (!init_from.empty()) load_model_weights(init_from, *model);
  // Parameters and buffers move first, so the arena, the optimizer state and every
  // activation live on the device.
  model->to(device);
  ParamArena arena(model->named_parameters());
  arena.mark_norm_parameters(norm_parameter_names(*model));
  SGDOptions so;
  so.lr = get_double(opt, "lr");
  so.momentum = get_double(opt, "momentum");
  so.nesterov = get_bool(opt, "nesterov");
  so.dampening = get_double(opt, "dampening");
  so.weight_decay = get_double(opt, "wd");
  // optim = sgd | lars (tools/train/optimizer_factory.h).
  std::unique_ptr<Optimizer> optimizer_owner = make_train_optimizer(opt, arena, so);
  Optimizer& optimizer = *optimizer_owner;
  // f16 gradients need dynamic loss scaling; bf16 has f32's exponent range and needs none.
  std::optional<GradScaler> scaler;
  if (amp == "f16") scaler.emplace(optimizer.arena());
  const GradAccumulation accumulation(get_int(opt, "accumulate_steps"));
  // Summing micro-batch gradients commutes only with averaging algorithms.
  DPLAB_CHECK(
      accumulation.steps() == 1 || get(opt, "algo") == "local" || get(opt, "algo") == "allreduce",
      "option accumulate_steps = {} needs algo local or allreduce, got '{}'", accumulation.steps(),
      get(opt, "algo"));
  opt.get_string("lr.schedule", option_default("lr.schedule"));  // documented default
  std::unique_ptr<LrSchedule> schedule = make_lr_schedule(opt, epochs);

  // Timeline (tools/train/run_trace.h): outlives the strategy, whose threads record into it.
  const std::unique_ptr<trace::Tracer> run_tracer = make_run_tracer(opt, out_dir, device);
  trace::Tracer* const tracer = run_tracer.get();
  std::unique_ptr<Strategy> strategy = make_strategy(opt);
  TrainContext ctx;
  ctx.model = model.get();
  ctx.arena = &arena;
  ctx.optimizer = &optimizer;
  ctx.options = &opt;
  ctx.buffers = model->named_buffers();  // broadcast at setup, averaged before evaluation
  ctx.tracer = tracer;
  strategy->setup(ctx);
  const bool rank0 = strategy->rank() == 0;
  // Every rank learns whether any rank saw a non-finite value or a pre-emption signal, kLag
  // ticks later (a non-blocking 8-byte allreduce per tick; tools/train/step_agreement.h).
  // Collective construction.
  StepAgreement agreement(opt, strategy->world_size());
  // Under amp = f16 the loss scaler owns inf/NaN gradients; the guard then checks the loss.
  NonfiniteGuard guard(arena, !scaler);
  // --slowdown RANK=FACTOR: this rank's compute is stretched by sleeping (comm/slowdown.h).
  Slowdown slowdown = Slowdown::from_options(opt, strategy->rank(), strategy->world_size());

  SamplerOptions sopt;
  sopt.rank = strategy->rank();
  sopt.world_size = strategy->world_size();
  sopt.seed = seed;
  sopt.shuffle = true;
  DistributedSampler sampler(data.train->size(), sopt);
  LoaderOptions lopt;
  lopt.batch_size = batch;
  lopt.workers = int(get_int(opt, "data.workers"));
  lopt.prefetch = int(get_int(opt, "data.prefetch"));
  lopt.seed = seed;
  BatchLoader loader(data.train, lopt);
  // Batches on the training device, uploaded one step ahead (tools/train/device_prefetch.h).
  DeviceBatches batches(loader, device);
  StepMetrics step_metrics(device);  // loss and accuracy sums, read back once per log line
  const int64_t shuffle_buffer = get_int(opt, "data.shuffle_buffer");
  // Tar shards: shards split across ranks, then a shuffle buffer (data/shards.h); otherwise
  // the DistributedSampler.
  auto epoch_indices = [&](int64_t epoch) {
    if (data.shards)
      return shard_stream_order(data.shards->shard_begin(), sopt.rank, sopt.world_size, seed, epoch,
                                shuffle_buffer);
    sampler.set_epoch(epoch);
    return sampler.indices();
  };
  // Evaluation: split across the ranks on a communicator of its own, with the loader's workers
  // (tools/train/evaluate.h); eval.batch 0 picks a batch from the image size.
  std::shared_ptr<Communicator> eval_comm;
  if (strategy->world_size() > 1) eval_comm = eval_world(opt);
  EvalOptions eval_opt;
  eval_opt.batch_size = eval_batch;
  eval_opt.workers = lopt.workers;
  eval_opt.prefetch = lopt.prefetch;
  eval_opt.comm = eval_comm.get();
  const int64_t rank_samples = data.shards
                                   ? shard_stream_count(data.shards->shard_begin(), sopt.world_size)
                                   : sampler.num_samples();
  const int64_t steps_per_epoch = loader.num_batches_for(rank_samples);
  // A batch larger than a rank's share: said once (tools/train/setting_warnings.h).
  if (const std::string w = batch_warning(batch, rank_samples); !w.empty() && rank0)
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
  parts.scaler = scaler ? &*scaler : nullptr;
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
  Progress progress(rank0 ? progress_mode : Progress::Mode::off, every_percent, progress_out);
  TrainResult result;
  result.is_rank0 = rank0;
  bool stop = max_steps > 0 && loop.optimizer_steps >= max_steps;
  int64_t skipped_steps = 0;  // StepPlan::compute == false ticks (count toward max_steps)
  const double base_lr = so.lr;
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
    loader.set_tracer(tracer, loop.global_step - loop.step_in_epoch);  // load batch events
    loader.start_epoch(epoch_indices(epoch), epoch, loop.step_in_epoch);
    batches.reset();
    strategy->begin_epoch(epoch);
    progress.begin_epoch(epoch, epochs, steps_per_epoch, loop.step_in_epoch);
    const auto t_epoch = Clock::now();
    step_log.begin_epoch(loop, *strategy, comm_tally);
    int64_t epoch_images = 0;
    int64_t epoch_computed = 0;
    const double slept_before = slowdown.total_slept_s();
    Batch b;
    StepTrace step_trace(tracer);  // step and data_wait events
    while (step_trace.next(batches, b, loop.global_step)) {
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
      export_model(path, *model, model_name, loop);
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
  apply_thread_option(get_int(opt, "threads"));
  const std::string checkpoint = opt.require_string("checkpoint");
  const int64_t eval_batch = get_int(opt, "eval.batch");
  Data data;
  const std::string name = get(opt, "data");
  if (starts_with(name, "shards:") || starts_with(name, "folder:")) {
    data = load_data(opt);
  } else {
    std::string dir = get(opt, "data.dir");
    if (dir.empty()) dir = find_dataset_dir(name);
    data.test = load_mnist(dir, "test", get_int(opt, "data.test_limit"), idx_classes(opt));
  }
  auto model = make_model(get(opt, "model"), 0, data.test->num_classes());
  load_model_weights(checkpoint, *model);
  EvalOptions eval_opt;
  eval_opt.batch_size = eval_batch;
  eval_opt.workers = int(get_int(opt, "data.workers"));
  eval_opt.prefetch = int(get_int(opt, "data.prefetch"));
  check_no_unknown_options(opt);
  // Under mpiexec the ranks split the test set (each loads the checkpoint itself).
  std::shared_ptr<Communicator> comm;
  if (launched_ranks() > 1) comm = eval_world(opt);
  eval_opt.comm = comm.get();
  const EvalResult r = evaluate(*model, data.test, eval_opt);
  EvalReport report{r.accuracy, r.loss, r.correct, r.count};
  report.top5 = r.top5;
  report.accuracy5 = r.accuracy5;
  report.correct5 = r.correct5;
  report.is_rank0 = !comm || comm->rank() == 0;
  return report;
}

}  // namespace dplab
