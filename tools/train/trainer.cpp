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
#include "dplab/tools/train/evaluate.h"
#include "dplab/tools/train/metrics.h"
#include "dplab/tools/train/optimizer_factory.h"
#include "dplab/tools/train/progress.h"
#include "dplab/tools/train/step_metrics.h"

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

// Config values a resumed run must share with the run that wrote the checkpoint (anything that
// changes the data order, the batches or the model).
std::map<std::string, std::string> resume_invariants(const Options& opt) {
  std::map<std::string, std::string> r;
  for (const char* k : {"model", "data", "batch", "seed", "data.train_limit"}) r[k] = get(opt, k);
  return r;
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
  apply_thread_option(get_int(opt, "threads"));

  // ---- set-up: read every option before the first step, so typos fail fast ---------------
  const std::string model_name = get(opt, "model");
  const uint64_t seed = uint64_t(get_int(opt, "seed"));
  const int64_t epochs = get_int(opt, "epochs");
  const int64_t batch = get_int(opt, "batch");
  const int64_t max_steps = get_int(opt, "max_steps");
  const int64_t eval_batch = get_int(opt, "eval.batch");
  const int64_t ckpt_every = get_int(opt, "checkpoint.every_epochs");
  const float label_smoothing = float(get_double(opt, "label_smoothing"));
  // amp = off | bf16 | f16 (mixed precision; core/autocast.h, optim/grad_scaler.h).
  const std::string amp = get(opt, "amp");
  DPLAB_CHECK(amp == "off" || amp == "bf16" || amp == "f16",
              "option amp: expected off, bf16 or f16, got '{}'", amp);
  const DType amp_dtype = amp == "bf16" ? DType::bf16 : amp == "f16" ? DType::f16 : DType::f32;
  const std::string out_dir = get(opt, "out");
  const std::string resume = get(opt, "resume");
  DPLAB_CHECK(epochs >= 1, "option epochs: expected >= 1, got {}", epochs);
  DPLAB_CHECK(batch >= 1, "option batch: expected >= 1, got {}", batch);
  DPLAB_CHECK(max_steps >= 0, "option max_steps: expected >= 0, got {}", max_steps);
  const Progress::Mode progress_mode = Progress::parse_mode(get(opt, "progress"));
  const int every_percent = int(get_int(opt, "progress.every_percent"));
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

  std::unique_ptr<Strategy> strategy = make_strategy(opt);
  TrainContext ctx;
  ctx.model = model.get();
  ctx.arena = &arena;
  ctx.optimizer = &optimizer;
  ctx.options = &opt;
  ctx.buffers = model->named_buffers();  // broadcast at setup, averaged before evaluation
  strategy->setup(ctx);
  const bool rank0 = strategy->rank() == 0;
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
  const int64_t steps_per_epoch = loader.num_batches_for(
      data.shards ? shard_stream_count(data.shards->shard_begin(), sopt.world_size)
                  : sampler.num_samples());
  check_no_unknown_options(opt);

  // ---- resume -------------------------------------------------------------------------------
  LoopState loop;
  loop.config = resume_invariants(opt);
  if (!resume.empty()) {
    LoopState saved = load_checkpoint(resume, *model, optimizer);
    for (const auto& [k, v] : loop.config) {
      auto it = saved.config.find(k);
      DPLAB_CHECK(it != saved.config.end() && it->second == v,
                  "--resume {}: option {} was '{}' in the checkpointed run, now '{}' (the data "
                  "order and batches would differ)",
                  resume, k, it == saved.config.end() ? "(unset)" : it->second, v);
    }
    saved.config = loop.config;
    loop = saved;
    for (double l : loop.epoch_losses) schedule->observe_epoch(l);
    if (rank0)
      summary << fmt::format("resumed from {} at epoch {} step {} (global step {})\n", resume,
                             loop.epoch + 1, loop.step_in_epoch, loop.global_step);
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
  auto checkpoint = [&](const std::string& name) -> std::string {
    if (out_dir.empty() || !rank0) return {};
    const std::string path = (std::filesystem::path(out_dir) / name).string();
    save_checkpoint(path, *model, optimizer, loop);
    return path;
  };

  Progress progress(rank0 ? progress_mode : Progress::Mode::off, every_percent, progress_out);
  TrainResult result;
  result.is_rank0 = rank0;
  double train_time = 0;
  int64_t train_images = 0;
  bool stop = max_steps > 0 && loop.optimizer_steps >= max_steps;
  int64_t skipped_steps = 0;  // StepPlan::compute == false ticks (count toward max_steps)
  const double base_lr = so.lr;
  bool evaluated = false;
  int64_t last_epoch_number = loop.epoch;  // 1-based number of the last epoch trained

  // ---- the loop (call points as in comm/strategy.h) -----------------------------------------
  while (loop.epoch < epochs && !stop) {
    const int64_t epoch = loop.epoch;
    loader.start_epoch(epoch_indices(epoch), epoch, loop.step_in_epoch);
    batches.reset();
    strategy->begin_epoch(epoch);
    progress.begin_epoch(epoch, epochs, steps_per_epoch, loop.step_in_epoch);
    const auto t_epoch = Clock::now();
    int64_t epoch_images = 0;
    int64_t epoch_computed = 0;
    const double slept_before = slowdown.total_slept_s();
    Batch b;
    while (batches.next(b)) {
      StepInfo step;
      step.epoch = epoch;
      step.step_in_epoch = loop.step_in_epoch;
      step.global_step = loop.global_step;
      step.steps_per_epoch = steps_per_epoch;
      step.total_epochs = epochs;
      optimizer.set_lr(base_lr * schedule->factor(loop.global_step, steps_per_epoch));

      const StepPlan plan = strategy->plan(step);
      if (!plan.compute) {  // this rank skips the tick (its batch is dropped)
        strategy->after_step(step);
        ++skipped_steps;
        ++loop.step_in_epoch;
        ++loop.global_step;
        if (max_steps > 0 && loop.optimizer_steps + skipped_steps >= max_steps) {
          stop = true;
          break;
        }
        continue;
      }
      if (plan.zero_grad && accumulation.first(loop.global_step)) optimizer.zero_grad();
      strategy->before_forward(step);
      slowdown.start();
      Tensor logits;
      {
        AutocastGuard autocast(amp_dtype);  // f32 (off) unless amp is set
        logits = model->forward(b.images);
      }
      Tensor loss = cross_entropy(logits, b.labels, label_smoothing);
      backward(scaler ? scaler->scale_loss(accumulation.scale(loss)) : accumulation.scale(loss));
      slowdown.stop();
      strategy->after_backward(step);
      slowdown.start();
      if (plan.optimizer_step && accumulation.last(loop.global_step)) {
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
      slowdown.pause();  // sleeps (FACTOR-1) x this iteration's compute
      strategy->after_step(step);
      ++epoch_computed;

      const int64_t n = b.labels.numel();
      step_metrics.add(loss, logits, b.labels, loop.epoch_loss_sum, loop.epoch_correct);
      loop.epoch_seen += n;
      ++loop.step_in_epoch;
      ++loop.global_step;
      epoch_images += n;
      const double elapsed = seconds_since(t_epoch);
      if (step_metrics.pending() && progress.will_draw(loop.step_in_epoch))
        step_metrics.flush(loop.epoch_loss_sum, loop.epoch_correct);
      progress.update(loop.step_in_epoch, loop.epoch_loss_sum / double(loop.epoch_seen),
                      elapsed > 0 ? double(epoch_images) / elapsed : 0.0);
      if (max_steps > 0 && loop.optimizer_steps + skipped_steps >= max_steps) {
        stop = true;
        break;
      }
    }
    step_metrics.flush(loop.epoch_loss_sum, loop.epoch_correct);
    const double epoch_time = seconds_since(t_epoch);
    train_time += epoch_time;
    train_images += epoch_images;
    progress.end_epoch();

    const bool epoch_done = loop.step_in_epoch >= steps_per_epoch;
    const double mean_loss = loop.epoch_seen ? loop.epoch_loss_sum / double(loop.epoch_seen) : 0;
    const double train_acc =
        loop.epoch_seen ? double(loop.epoch_correct) / double(loop.epoch_seen) : 0;
    if (epoch_done) {
      strategy->end_epoch(epoch, mean_loss);
      schedule->observe_epoch(mean_loss);
    }
    // End of training: an algorithm whose ranks diverge builds its final model here, once.
    if (stop || (epoch_done && epoch + 1 == epochs)) strategy->finish_training();
    strategy->drain();  // nothing in flight before evaluation and checkpoints
    const EvalResult ev = evaluate(*model, data.test, eval_batch);
    evaluated = true;
    last_epoch_number = epoch + 1;
    const CommStats comm = strategy->take_stats();
    rank_metrics.write({{"kind", "rank_epoch"},
                        {"rank", strategy->rank()},
                        {"epoch", epoch + 1},
                        {"time_s", epoch_time},
                        {"computed_steps", epoch_computed},
                        {"slowdown", slowdown.factor()},
                        {"slowdown_sleep_s", slowdown.total_slept_s() - slept_before},
                        {"comm_exposed_wait_s", comm.exposed_wait_s},
                        {"comm_in_flight_s", comm.in_flight_s},
                        {"idle_fraction", epoch_time > 0 ? comm.exposed_wait_s / epoch_time : 0}});
    // Gossip algorithms: the consensus average as a second evaluated model (collective).
    std::optional<EvalResult> ev_consensus;
    strategy->consensus_eval([&] { ev_consensus = evaluate(*model, data.test, eval_batch); });

    result.train_loss = mean_loss;
    result.train_acc = train_acc;
    result.test_acc = ev.accuracy;
    result.test_loss = ev.loss;
    if (epoch_done) {
      loop.epoch_losses.push_back(mean_loss);
      ++loop.epoch;
      loop.step_in_epoch = 0;
      loop.epoch_loss_sum = 0;
      loop.epoch_correct = 0;
      loop.epoch_seen = 0;
      result.epochs_done = loop.epoch;
    }
    if (rank0) {
      const double ips = epoch_time > 0 ? double(epoch_images) / epoch_time : 0;
      nlohmann::json rec = {{"kind", "epoch"},
                            {"epoch", epoch + 1},
                            {"complete", epoch_done},
                            {"step", loop.global_step},
                            {"loss", mean_loss},
                            {"train_acc", train_acc},
                            {"test_loss", ev.loss},
                            {"test_acc", ev.accuracy},
                            {"images_per_s", ips},
                            {"time_s", epoch_time},
                            {"lr", optimizer.lr()},
                            {"comm_bytes", comm.bytes_sent},
                            {"comm_collectives", comm.collectives},
                            {"comm_allreduces", comm.allreduces},
                            {"comm_in_flight_s", comm.in_flight_s},
                            {"comm_exposed_wait_s", comm.exposed_wait_s},
                            // the same three under the names the metrics format documents
                            {"bytes_sent", comm.bytes_sent},
                            {"allreduces", comm.allreduces},
                            {"exposed_wait_s", comm.exposed_wait_s}};
      for (const auto& [k, v] : strategy->state()) rec["algo." + k] = v;
      if (ev_consensus) {
        rec["test_acc_consensus"] = ev_consensus->accuracy;
        rec["test_loss_consensus"] = ev_consensus->loss;
      }
      metrics.write(rec);
      summary << fmt::format(
          "epoch {}/{}{}  loss {:.4f}  train_acc {:.4f}  test_acc {:.4f}  {:.0f} img/s  {:.1f} s\n",
          epoch + 1, epochs, epoch_done ? "" : " (partial)", mean_loss, train_acc, ev.accuracy, ips,
          epoch_time);
      summary.flush();
    }
    if (epoch_done && ckpt_every > 0 && loop.epoch % ckpt_every == 0 && loop.epoch < epochs)
      checkpoint("checkpoint.safetensors");
  }

  strategy->drain();
  if (!evaluated) {  // resumed from a finished run: report its model
    const EvalResult ev = evaluate(*model, data.test, eval_batch);
    result.test_acc = ev.accuracy;
    result.test_loss = ev.loss;
  }
  result.epochs_done = loop.epoch;
  result.global_step = loop.global_step;
  result.images_per_s = train_time > 0 ? double(train_images) / train_time : 0;
  result.time_s = seconds_since(t_start);
  result.final_checkpoint = checkpoint("final.safetensors");
  if (rank0) {
    metrics.write({{"kind", "final"},
                   {"epoch", last_epoch_number},
                   {"epochs_completed", loop.epoch},
                   {"step", loop.global_step},
                   {"loss", result.train_loss},
                   {"train_acc", result.train_acc},
                   {"test_loss", result.test_loss},
                   {"test_acc", result.test_acc},
                   {"images_per_s", result.images_per_s},
                   {"time_s", result.time_s}});
  }
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
  check_no_unknown_options(opt);
  const EvalResult r = evaluate(*model, data.test, eval_batch);
  return {r.accuracy, r.loss, r.correct, r.count};
}

}  // namespace dplab
