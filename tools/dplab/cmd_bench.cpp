// `dplab bench`: timings of the pieces a training run is made of.
//   train      forward + backward + SGD step, exactly the calls the trainer makes per step
//   infer      eval-mode forward under NoGradGuard
//   allreduce  dplab's Communicator::allreduce against MPI_Allreduce on the same buffer
//   loader     decode + training transform of JPEG folders/shards (bench_loader.h)
// Timings are per step/call after warm-up; we report the median (robust to the other work on
// a shared machine) and the min/max spread. --compare-pytorch runs tools/bench/
// torch_train_step.py with the same model, batch, threads, device and precision (--amp bf16:
// torch.autocast to bfloat16) in the same invocation.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/error.h"
#include "dplab/core/ops.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/usage_error.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "dplab/tools/dplab/bench_loader.h"
#include "dplab/tools/dplab/bench_profile.h"
#include "dplab/tools/dplab/bench_python.h"
#include "dplab/tools/dplab/bench_virtual.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/train/loop/forward_backward.h"
#include "dplab/train/loop/trainer.h"

#ifdef DPLAB_WITH_CUDA
#include <cuda_runtime.h>

#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/cudnn_handle.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#endif

namespace dplab::cli {
namespace {

using BenchClock = std::chrono::steady_clock;

double ms_since(BenchClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(BenchClock::now() - t0).count();
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread spread(std::vector<double> v) {
  DPLAB_CHECK(!v.empty(), "no timings to summarise");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {med, v.front(), v.back()};
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// ---- train / infer --------------------------------------------------------------------------

struct ModelBenchArgs {
  std::string model = "mnist_cnn";
  int64_t batch = 64, steps = 20, warmup = 5, threads = 0;
  uint64_t seed = 0;
  bool compare = false, json = false;
  std::string device = "cpu";
  std::string amp = "off";  // off or bf16: the forward under AutocastGuard, as the trainer does
  std::string profile_out;  // train: write a compute profile (bench_profile.h)
  std::string input;        // CxHxW of the random batch ("" = the model's own input shape)
  int64_t classes = 0;      // 0: the model's default class count
};

// --input "1x28x28": the sample shape, for a profile that must match a run on other data
// (a ResNet on Fashion-MNIST takes 1 x 28 x 28 and builds a 1-channel stem for it).
Shape parse_input_shape(const std::string& s) {
  Shape shape;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t x = std::min(s.find('x', at), s.size());
    const std::string part = s.substr(at, x - at);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || v < 1)
      throw UsageError(
          fmt::format("--input '{}': expected CxHxW with positive integers, e.g. "
                      "1x28x28; '{}' is not one",
                      s, part));
    shape.push_back(v);
    at = x + 1;
  }
  if (shape.size() != 3)
    throw UsageError(
        fmt::format("--input '{}': expected three sizes CxHxW, got {}", s, shape.size()));
  return shape;
}

// Device-side timing boundaries and memory (--device cuda). Kernels run asynchronously: a
// step's time is only known once the device has finished it, so the clock is read after the
// benchmarked device's compute and comm streams have drained (every kernel of a step runs on
// them), waited for with comm.timeout_s (core/cuda/stream_wait.h), and only there. Device memory is
// the caching allocator's peak of bytes handed out (what the step needed), not the process RSS.
// What "f32" and "bf16" mean for dplab's side of a comparison. dplab's f32 never uses TF32:
// cuDNN convolutions are set to CUDNN_FMA_MATH and cuBLAS runs CUBLAS_COMPUTE_32F on a
// CUBLAS_DEFAULT_MATH handle (core/cuda/conv.cpp, gemm.cpp).
std::string precision_text(const std::string& amp, Device d) {
  if (amp == "bf16") {  // what the backend keeps between layers: core/autocast.h, core/tensor.h
    const Backend& be = backend_for(d);
    const std::string layout =
        be.activation_layout == Layout::strided
            ? ""
            : fmt::format(", {} activations where the convolutions write them",
                          layout_name(be.activation_layout));
    return be.bf16_activations
               ? "bf16 autocast (amp = bf16): bf16 activations, f32 parameters" + layout
               : "bf16 autocast (amp = bf16): bf16 operands, f32 activations and parameters" +
                     layout;
  }
  return d.is_cuda() ? "f32 (no TF32: FMA math in cuDNN and cuBLAS)" : "f32";
}

void device_sync(Device d) {
#ifdef DPLAB_WITH_CUDA
  if (d.is_cuda()) {
    use_device(d);
    cuda::wait_stream(cuda::compute_stream(d.index), "bench: the step's compute stream");
    cuda::wait_stream(cuda::comm_stream(d.index), "bench: the step's comm stream");
  }
#else
  (void)d;
#endif
}

double device_peak_mb(Device d) {
#ifdef DPLAB_WITH_CUDA
  if (d.is_cuda())
    return double(cuda::device_allocator(d.index).stats().peak_allocated_bytes) / (1024.0 * 1024.0);
#else
  (void)d;
#endif
  return 0;
}

// The cuDNN convolution algorithms chosen so far in this process (core/conv_algo_log.h): one
// object per (direction, layer shape, algorithm); empty on the CPU or without CUDA.
nlohmann::json cudnn_algorithms(Device d) {
  nlohmann::json out = nlohmann::json::array();
#ifdef DPLAB_WITH_CUDA
  if (d.is_cuda())
    for (const ConvAlgoUse& u : cuda::conv_algo_choices())
      out.push_back({{"direction", u.direction},
                     {"shape", u.shape},
                     {"algorithm", u.algorithm},
                     {"math", u.math},
                     {"workspace_bytes", u.workspace_bytes},
                     {"calls", u.calls}});
#else
  (void)d;
#endif
  return out;
}

void device_reset_peak(Device d) {
#ifdef DPLAB_WITH_CUDA
  if (d.is_cuda()) cuda::device_allocator(d.index).reset_peak();
#else
  (void)d;
#endif
}

nlohmann::json run_pytorch(const ModelBenchArgs& a, int threads, const std::string& mode) {
  return run_python_json(
      bench_script("torch_train_step.py", "DPLAB_TORCH_BENCH", "--compare-pytorch"),
      fmt::format("--model {} --batch {} --threads {} --warmup {} --steps {} --mode {} --device {} "
                  "--dtype {}",
                  shell_quote(a.model), a.batch, threads, a.warmup, a.steps, mode,
                  shell_quote(Device::parse(a.device).str()), a.amp == "bf16" ? "bf16" : "f32"),
      "--compare-pytorch");
}

int run_model_bench(const ModelBenchArgs& a, bool train) {
  DPLAB_CHECK(a.batch >= 1 && a.steps >= 1 && a.warmup >= 0,
              "bench: expected --batch >= 1, --steps >= 1, --warmup >= 0 (got {}, {}, {})", a.batch,
              a.steps, a.warmup);
  const Device device = Device::parse(a.device);
  if (device.is_cuda()) {
    DPLAB_CHECK(cuda_available(), "bench --device {}: {}", device.str(), cuda_unavailable_reason());
    DPLAB_CHECK(device.index < cuda_device_count(), "bench --device {}: only {} CUDA device(s)",
                device.str(), cuda_device_count());
    use_device(device);  // this thread's device (core/device.h)
    // The first step on a device runs cuDNN's algorithm search and the allocator's first
    // cudaMallocs: never timed (PyTorch's side always warms up too).
    DPLAB_CHECK_OPTION(a.warmup >= 1,
                       "bench --device {}: expected --warmup >= 1 (the first step "
                       "searches cuDNN's algorithms), got {}",
                       device.str(), a.warmup);
  }
  apply_thread_option(a.threads);
  const int threads = omp_get_max_threads();
  const ModelInfo info = model_info(a.model);
  const Shape sample = a.input.empty() ? info.input_shape : parse_input_shape(a.input);
  const int classes = a.classes > 0 ? int(a.classes) : info.num_classes;
  DPLAB_CHECK_OPTION(!a.compare || (a.input.empty() && a.classes == 0),
                     "bench: --compare-pytorch times the model's own input shape and classes; "
                     "drop --input / --classes");
  auto model = make_model(a.model, a.seed, classes, false, int(sample[0]));
  model->train(train);
  model->to(device);
  device_reset_peak(device);  // the peak counts the model and the steps, nothing earlier
  ParamArena arena(model->named_parameters());
  SGDOptions so;
  so.lr = 0.01;
  so.momentum = 0.9;
  so.nesterov = true;
  SGD optimizer(arena, so);

  // Random images in [0, 1) and random labels: the timing does not depend on the values.
  Shape shape{a.batch};
  for (auto d : sample) shape.push_back(d);
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  std::mt19937_64 rng(a.seed);
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  std::vector<float> pixels(static_cast<size_t>(numel));
  for (auto& p : pixels) p = uni(rng);
  std::vector<int64_t> labels(static_cast<size_t>(a.batch));
  for (auto& l : labels) l = int64_t(rng() % uint64_t(classes));
  const Tensor x = Tensor::from_vector(pixels, shape).to(device);
  const Tensor y = Tensor::from_vector_i64(labels, {a.batch}).to(device);

  // The training loop's forward, loss and backward (train/loop/forward_backward.h).
  StepLoss how;
  how.amp = a.amp == "bf16" ? DType::bf16 : DType::f32;  // f32 (off) unless --amp bf16
  Tensor last_loss;  // read once, after the timing: which precision ran shows in its value
  auto step = [&] {
    if (train) {
      optimizer.zero_grad();
      last_loss = forward_backward(*model, x, y, how).loss;
      optimizer.step();
    } else {
      NoGradGuard no_grad;
      AutocastGuard autocast(how.amp);
      (void)model->forward(x);
    }
  };
  for (int64_t i = 0; i < a.warmup; ++i) step();
  device_sync(device);
  std::vector<double> ms;
  for (int64_t i = 0; i < a.steps; ++i) {
    const auto t0 = BenchClock::now();
    step();
    device_sync(device);
    ms.push_back(ms_since(t0));
  }
  if (train && !a.profile_out.empty()) {
    // The virtual cluster's compute profile: a separate pass, phase by phase.
    cluster::ComputeProfile prof = profile_train_steps(*model, arena, optimizer, x, y, how, a.steps,
                                                       [device] { device_sync(device); });
    prof.model = a.model;
    prof.batch = a.batch;
    prof.device = device.str();
    prof.threads = threads;
    std::ofstream out(a.profile_out);
    out << cluster::compute_profile_json(prof) << "\n";
    DPLAB_CHECK(out.good(), "bench --profile-out {}: cannot write the file", a.profile_out);
  }
  const Spread s = spread(ms);
  const double ips = double(a.batch) * 1e3 / s.median;
  const double rss = peak_rss_mb();  // before the PyTorch child runs (it is not counted anyway)
  const std::string mode = train ? "train" : "infer";

  nlohmann::json j = {{"mode", mode},
                      {"model", a.model},
                      {"batch", a.batch},
                      {"threads", threads},
                      {"steps", a.steps},
                      {"warmup", a.warmup},
                      {"ms_per_step_median", s.median},
                      {"ms_per_step_min", s.min},
                      {"ms_per_step_max", s.max},
                      {"images_per_s", ips},
                      {"peak_rss_mb", rss},
                      {"device", device.str()},
                      {"amp", a.amp},
                      {"precision", precision_text(a.amp, device)}};
  if (train) j["last_loss"] = last_loss.item();
  if (device.is_cuda()) {
    j["peak_device_mb"] = device_peak_mb(device);
    j["cudnn_algorithms"] = cudnn_algorithms(device);
  }
  nlohmann::json pt;
  if (a.compare) {
    pt = run_pytorch(a, threads, mode);
    for (const char* k : {"ms_per_step_median", "ms_per_step_min", "ms_per_step_max",
                          "images_per_s", "peak_rss_mb"})
      j[std::string("pytorch_") + k] = pt.at(k);
    j["pytorch_framework"] = pt.value("framework", "pytorch");
    j["pytorch_dtype"] = pt.value("dtype", "f32");
    if (pt.contains("peak_device_mb")) j["pytorch_peak_device_mb"] = pt["peak_device_mb"];
    // How PyTorch ran (torch_train_step.py): f32 with TF32 off, or bf16 as its users run it.
    for (const char* k : {"precision", "tf32", "tf32_matmul", "tf32_cudnn", "channels_last",
                          "cudnn_benchmark", "cudnn", "torch", "warmup", "model_source"})
      if (pt.contains(k)) j[std::string("pytorch_") + k] = pt[k];
    j["ratio"] = ips / pt.at("images_per_s").get<double>();
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "dplab bench {}: {}, batch {}, {} thread{}, {} steps after {} warm-up{}{}\n", mode, a.model,
      a.batch, threads, threads == 1 ? "" : "s", a.steps, a.warmup,
      device.is_cuda() ? " on " + device.str() : "", a.amp == "bf16" ? ", amp bf16" : "");
  auto row = [](const std::string& who, double med, double lo, double hi, double ips, double rss) {
    std::cout << fmt::format(
        "  {:<18} median {:9.3f} ms/step (min {:.3f}, max {:.3f})  {:9.1f} images/s  peak RSS "
        "{:.0f} MB\n",
        who, med, lo, hi, ips, rss);
  };
  row("dplab", s.median, s.min, s.max, ips, rss);
  std::cout << fmt::format("  dplab precision: {}\n", j["precision"].get<std::string>());
  if (device.is_cuda()) {
    std::cout << fmt::format("  device memory peak {:.1f} MB (caching allocator, bytes in use)\n",
                             device_peak_mb(device));
    for (const auto& u : j["cudnn_algorithms"])
      std::cout << fmt::format("  cuDNN {:<15} {:<22} {:<10} {} ({} calls)\n",
                               u["direction"].get<std::string>(), u["algorithm"].get<std::string>(),
                               u["math"].get<std::string>(), u["shape"].get<std::string>(),
                               u["calls"].get<int64_t>());
  }
  if (a.compare) {
    row(pt.value("framework", "pytorch"), pt.at("ms_per_step_median"), pt.at("ms_per_step_min"),
        pt.at("ms_per_step_max"), pt.at("images_per_s"), pt.at("peak_rss_mb"));
    if (pt.contains("precision"))
      std::cout << fmt::format("  pytorch precision: {}\n", pt["precision"].get<std::string>());
    if (pt.contains("peak_device_mb"))
      std::cout << fmt::format("  pytorch device memory peak {:.1f} MB (max_memory_allocated)\n",
                               pt["peak_device_mb"].get<double>());
    std::cout << fmt::format("  ratio (dplab speed / pytorch speed): {:.3f}\n",
                             j["ratio"].get<double>());
  }
  return 0;
}

void add_model_flags(CLI::App* c, ModelBenchArgs& a) {
  c->add_option("--model", a.model, "model: " + joined(model_names()))->capture_default_str();
  c->add_option("--batch", a.batch, "batch size")->capture_default_str();
  c->add_option("--threads", a.threads, "OpenMP threads (0: the number of cores)")
      ->capture_default_str();
  c->add_option("--steps", a.steps, "timed steps")->capture_default_str();
  c->add_option("--warmup", a.warmup, "untimed steps first")->capture_default_str();
  c->add_option("--seed", a.seed, "seed of the weights and the random batch")
      ->capture_default_str();
  c->add_flag("--compare-pytorch", a.compare,
              "also time the same network in PyTorch (tools/bench/torch_train_step.py, "
              "/usr/bin/python3 or $DPLAB_PYTHON) and print the ratio");
  c->add_flag("--json", a.json, "print one JSON object instead of the table");
  c->add_option("--input", a.input,
                "CxHxW of the random batch (default: the model's input), e.g. 1x28x28 for a "
                "ResNet profile that matches a Fashion-MNIST run");
  c->add_option("--classes", a.classes, "classes of the model's output (0: the model's default)")
      ->capture_default_str();
  c->add_option("--amp", a.amp,
                "off or bf16: the forward under autocast (conv and linear on bf16 operands, f32 "
                "weights; core/autocast.h), PyTorch's under torch.autocast(bfloat16)")
      ->check(CLI::IsMember({"off", "bf16"}))
      ->capture_default_str();
  c->add_option("--device", a.device,
                "cpu, cuda or cuda:N (on a device: timed between device synchronisations, memory "
                "as the caching allocator's peak)")
      ->capture_default_str();
}

// ---- allreduce ------------------------------------------------------------------------------

struct AllreduceArgs {
  std::string sizes = "4,1K,16K,256K,1M,4M,16M,64M";
  int64_t iters = 0, warmup = 3;
  std::string wait = "auto";
  bool json = false;
  std::string cluster;  // virtual time on a modelled cluster (bench_virtual.h)
  int ranks_per_node = 0;
  bool nic_sharing = false;
};

// "4", "1K", "16M", "1G": bytes (powers of 1024).
int64_t parse_size(const std::string& s) {
  size_t pos = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--sizes: '{}' is not a size (e.g. 4, 1K, 16M)", s));
  }
  const std::string unit = s.substr(pos);
  int64_t mul = 1;
  if (unit == "K" || unit == "k")
    mul = int64_t(1) << 10;
  else if (unit == "M" || unit == "m")
    mul = int64_t(1) << 20;
  else if (unit == "G" || unit == "g")
    mul = int64_t(1) << 30;
  else if (!unit.empty() && unit != "B" && unit != "b")
    throw UsageError(fmt::format("--sizes: '{}': unknown unit '{}' (K, M or G)", s, unit));
  if (v * mul < 4) throw UsageError(fmt::format("--sizes: '{}' is below one f32 (4 bytes)", s));
  return v * mul;
}

std::string size_text(int64_t b) {
  if (b >= (int64_t(1) << 30) && b % (int64_t(1) << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (int64_t(1) << 20) && b % (int64_t(1) << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (int64_t(1) << 10) && b % (int64_t(1) << 10) == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

int run_allreduce_bench(const AllreduceArgs& a) {
  std::vector<int64_t> sizes;
  for (size_t b = 0, e; b <= a.sizes.size(); b = e + 1) {
    e = a.sizes.find(',', b);
    if (e == std::string::npos) e = a.sizes.size();
    if (e > b) sizes.push_back(parse_size(a.sizes.substr(b, e - b)));
  }
  if (sizes.empty()) throw UsageError("--sizes: no sizes given");
  if (!a.cluster.empty())
    return run_virtual_allreduce_bench(
        {a.cluster, a.ranks_per_node, sizes, a.iters > 0 ? a.iters : 5, a.json, a.nic_sharing});
  Options o;
  o.set("comm.wait", a.wait);
  auto world = mpi_world(CommConfig::from_options(o));
  const int rank = world->rank(), n = world->size();

  // Each call is timed alone between barriers; a rank's median is its typical call, and the
  // slowest rank's median is the collective's time.
  auto time_calls = [&](Tensor& t, int64_t iters, const std::function<void()>& call) {
    std::vector<double> us;
    for (int64_t i = 0; i < a.warmup + iters; ++i) {
      t.fill_(1.0);  // keeps the values finite however many sums are taken
      DPLAB_MPI(MPI_Barrier, MPI_COMM_WORLD);
      const auto t0 = BenchClock::now();
      call();
      if (i >= a.warmup) us.push_back(ms_since(t0) * 1e3);
    }
    double med = spread(us).median, slowest = 0;
    DPLAB_MPI(MPI_Allreduce, &med, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };

  nlohmann::json rows = nlohmann::json::array();
  if (rank == 0 && !a.json) {
    std::cout << fmt::format("dplab bench allreduce: {} ranks, f32 sum, wait policy {}\n", n,
                             a.wait);
    std::cout << fmt::format("{:>8} {:>6} {:>12} {:>12} {:>12} {:>12}\n", "size", "iters",
                             "dplab us", "MPI us", "dplab GB/s", "MPI GB/s");
  }
  for (int64_t bytes : sizes) {
    const int64_t elems = bytes / 4;
    // Enough calls for a stable median, without spending minutes on the large sizes.
    const int64_t iters =
        a.iters > 0 ? a.iters : std::clamp<int64_t>((int64_t(256) << 20) / bytes, 5, 200);
    Tensor t = Tensor::empty({elems});
    const double dplab_us = time_calls(t, iters, [&] { world->allreduce(t); });
    const double mpi_us = time_calls(t, iters, [&] {
      DPLAB_MPI(MPI_Allreduce, MPI_IN_PLACE, t.data<float>(), int(elems), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
    });
    const double gbps = double(elems * 4) / (dplab_us * 1e3),
                 mpi_gbps = double(elems * 4) / (mpi_us * 1e3);
    rows.push_back({{"bytes", elems * 4},
                    {"iters", iters},
                    {"dplab_us", dplab_us},
                    {"mpi_us", mpi_us},
                    {"dplab_gb_per_s", gbps},
                    {"mpi_gb_per_s", mpi_gbps}});
    if (rank == 0 && !a.json)
      std::cout << fmt::format("{:>8} {:>6} {:>12.1f} {:>12.1f} {:>12.3f} {:>12.3f}\n",
                               size_text(elems * 4), iters, dplab_us, mpi_us, gbps, mpi_gbps)
                << std::flush;
  }
  if (rank == 0 && a.json)
    std::cout << nlohmann::json{{"ranks", n}, {"wait", a.wait}, {"rows", rows}}.dump() << "\n";
  return 0;
}

}  // namespace

CommandSpec bench_command() {
  return {"bench", [](CLI::App& app) -> Action {
            CLI::App* b = app.add_subcommand(
                "bench", "time training steps, inference, allreduce or the loader");
            b->require_subcommand(1);
            auto tr = std::make_shared<ModelBenchArgs>();
            auto inf = std::make_shared<ModelBenchArgs>();
            auto ar = std::make_shared<AllreduceArgs>();
            CLI::App* t = b->add_subcommand(
                "train", "forward + backward + SGD step on a random batch (median over steps)");
            add_model_flags(t, *tr);
            t->add_option("--profile-out", tr->profile_out,
                          "FILE: also write a compute profile (forward, backward, optimizer "
                          "times, when each gradient is ready) for a virtual cluster's "
                          "cluster.compute = profile:FILE (docs/virtual_cluster.md)");
            CLI::App* i =
                b->add_subcommand("infer", "eval-mode forward without autograd on a random batch");
            add_model_flags(i, *inf);
            CLI::App* r = b->add_subcommand(
                "allreduce",
                "dplab Communicator::allreduce vs MPI_Allreduce (run under mpiexec); rank 0 "
                "prints the table");
            r->add_option("--sizes", ar->sizes, "message sizes in bytes (K, M, G suffixes)")
                ->capture_default_str();
            r->add_option("--iters", ar->iters, "timed calls per size (0: by size, 5..200)")
                ->capture_default_str();
            r->add_option("--warmup", ar->warmup, "untimed calls per size first")
                ->capture_default_str();
            r->add_option("--wait", ar->wait, "dplab's waiting: auto, spin or backoff")
                ->capture_default_str();
            r->add_flag("--json", ar->json, "rank 0 prints one JSON object");
            r->add_option("--cluster", ar->cluster,
                          "PRESET|FILE: time allreduce and a point-to-point exchange in virtual "
                          "time on a modelled cluster, beside the model's formula "
                          "(dplab cluster list)");
            r->add_option("--ranks-per-node", ar->ranks_per_node,
                          "with --cluster: ranks per node (0: the platform's)")
                ->capture_default_str();
            r->add_flag("--nic-sharing", ar->nic_sharing,
                        "with --cluster: the ranks of a node share its network interface in "
                        "the exchange (option cluster.nic_sharing)");
            const Action loader = add_loader_bench(*b);
            return [=]() {
              if (*t) return run_model_bench(*tr, true);
              if (*i) return run_model_bench(*inf, false);
              if (*b->get_subcommand("loader")) return loader();
              return run_allreduce_bench(*ar);
            };
          }};
}

}  // namespace dplab::cli
