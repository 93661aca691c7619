#include "dplab/tools/dplab/bench_loader.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"
#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/loader.h"
#include "dplab/data/sampler.h"
#include "dplab/data/shards.h"
#include "dplab/tools/dplab/bench_python.h"
#include "dplab/train/config/config.h"
#include "dplab/train/loop/trainer.h"

namespace dplab::cli {
namespace {

namespace fs = std::filesystem;

// Without --images: the whole set, up to this many (a few seconds per side at one worker on
// ImageNet-sized JPEGs; enough batches that pipeline fill and drain are a small part).
constexpr int64_t kDefaultImageCap = 2000;
// The loader's queue depth and the shard shuffle buffer: the training defaults (data.prefetch,
// data.shuffle_buffer), so the benchmark runs what `dplab train` runs.
constexpr int kPrefetchBatches = 4;
constexpr int64_t kShuffleBuffer = 1000;

struct LoaderBenchArgs {
  std::string data;
  int workers = -1;     // -1: the CPUs this process may run on
  int64_t images = 0;   // 0: the whole set, at most kDefaultImageCap
  int64_t warmup = -1;  // batches; -1: two per worker (at least two)
  int64_t batch = 64;
  int size = 224;
  uint64_t seed = 0;
  bool json = false, compare = false;
  bool full_decode = false;  // no DCT-domain downscaling (as Pillow decodes)
};

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

// The data as `dplab train` reads it for training (train/loop/trainer.cpp, load_data and
// image_data): folder:DIR (DIR/train when DIR has train/ and val/) or shards:GLOB, with the
// train transform; the epoch order the trainer uses on one rank (shuffled sampler, or the shard
// stream with its shuffle buffer). Damaged images stop the benchmark instead of being skipped:
// the timing must be of the images named.
struct BenchData {
  std::string kind;  // "folder" or "shards"
  std::string root;  // folder: the class directories' parent
  std::vector<std::string> shards;
  std::shared_ptr<EncodedImageDataset> dataset;
  std::vector<int64_t> order;  // epoch 0's order over the whole set
};

BenchData open_data(const std::string& spec, const ImageTransformOptions& t, uint64_t seed) {
  BenchData d;
  if (spec.starts_with("folder:")) {
    d.kind = "folder";
    d.root = spec.substr(7);
    DPLAB_CHECK(!d.root.empty(), "bench loader --data folder:DIR: no directory given");
    std::error_code ec;
    if (fs::is_directory(d.root + "/train", ec) && fs::is_directory(d.root + "/val", ec))
      d.root += "/train";
    std::shared_ptr<ImageFolderDataset> folder;
    try {
      folder = std::make_shared<ImageFolderDataset>(d.root, t, OnError::fail);
    } catch (const fs::filesystem_error& e) {
      DPLAB_FAIL("bench loader --data {}: cannot read the image folder {}: {}", spec, d.root,
                 e.what());
    }
    d.dataset = folder;
    SamplerOptions so;
    so.shuffle = true;
    so.seed = seed;
    d.order = DistributedSampler(folder->size(), so).indices();
    return d;
  }
  if (spec.starts_with("shards:")) {
    d.kind = "shards";
    DPLAB_CHECK(spec.size() > 7, "bench loader --data shards:GLOB: no pattern given");
    d.shards = expand_glob(spec.substr(7));
    auto shards = std::make_shared<ShardDataset>(d.shards, t, OnError::fail);
    d.dataset = shards;
    d.order = shard_stream_order(shards->shard_begin(), 0, 1, seed, 0, kShuffleBuffer);
    return d;
  }
  throw UsageError(
      fmt::format("bench loader --data '{}': expected folder:DIR or shards:GLOB", spec));
}

// What is timed for one framework.
struct SideResult {
  int64_t images = 0, batches = 0;
  double seconds = 0;
  std::vector<int64_t> batch_shape;  // the first batch's
  int64_t label_sum = 0;
  std::vector<int64_t> first_labels;
  std::vector<double> first_channel_mean;  // the first batch's normalised pixels, per channel
};

// Runs `warm` (untimed) and then `timed` through a BatchLoader as the trainer builds it; the
// clock runs from starting the timed epoch (its workers start then) to receiving its last batch.
SideResult time_dplab(const BenchData& d, const LoaderBenchArgs& a, int workers,
                      const std::vector<int64_t>& warm, const std::vector<int64_t>& timed) {
  LoaderOptions lo;
  lo.batch_size = a.batch;
  lo.workers = workers;
  lo.prefetch = kPrefetchBatches;
  lo.seed = a.seed;
  BatchLoader loader(d.dataset, lo);
  Batch b;
  if (!warm.empty()) {
    loader.start_epoch(warm, 0);
    while (loader.next(b)) {
    }
  }
  SideResult r;
  Batch first;
  const auto t0 = std::chrono::steady_clock::now();
  loader.start_epoch(timed, 1);
  while (loader.next(b)) {
    // Cheap per-batch bookkeeping only (the shape, the labels); the pixel statistics are taken
    // from the first batch after the clock stops.
    const Shape& s = b.images.shape();
    const int64_t n = s.empty() ? 0 : s[0];
    DPLAB_CHECK(b.images.dtype() == DType::f32 && s.size() == 4 && s[1] == 3 && s[2] == a.size &&
                    s[3] == a.size && b.labels.numel() == n,
                "bench loader: batch {} is {} with {} labels, expected [n, 3, {}, {}] f32",
                b.number, b.images.str(), b.labels.numel(), a.size, a.size);
    const int64_t* lab = b.labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) r.label_sum += lab[i];
    if (r.batches == 0) first = b;
    r.images += n;
    ++r.batches;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.batches > 0) {
    r.batch_shape = first.images.shape();
    const int64_t n = r.batch_shape[0], plane = int64_t(a.size) * a.size;
    const float* px = first.images.data<float>();
    for (int c = 0; c < 3; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < plane; ++p) sum += px[(i * 3 + c) * plane + p];
      r.first_channel_mean.push_back(sum / double(n * plane));
    }
    const int64_t* lab = first.labels.data<int64_t>();
    r.first_labels.assign(lab, lab + n);
  }
  return r;
}

// A temporary file removed when it goes out of scope (the torchvision side's instructions).
struct TempFile {
  std::string path;
  TempFile() {
    std::string t = (fs::temp_directory_path() / "dplab-bench-loader-XXXXXX").string();
    const int fd = mkstemp(t.data());
    DPLAB_CHECK(fd >= 0, "bench loader: cannot create a temporary file {}", t);
    ::close(fd);
    path = t;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

// The torchvision side (tools/bench/torchvision_loader.py) gets the same images in the same
// order: dataset indices in dplab's numbering plus each timed image's name, which the script
// checks against its own dataset's numbering (ImageFolder, or its own reading of the tar
// members), so a mismatch fails instead of timing other images.
nlohmann::json run_torchvision(const BenchData& d, const LoaderBenchArgs& a, int workers,
                               const ImageTransformOptions& t, const std::vector<int64_t>& warm,
                               const std::vector<int64_t>& timed) {
  nlohmann::json m;
  m["kind"] = d.kind;
  if (d.kind == "folder")
    m["root"] = d.root;
  else
    m["shards"] = d.shards;
  m["dataset_images"] = d.dataset->size();
  m["warmup_order"] = warm;
  m["order"] = timed;
  std::vector<std::string> names;
  for (int64_t i : timed) {
    const std::string n = d.dataset->sample_name(i);
    names.push_back(d.kind == "folder" ? fs::path(n).lexically_relative(d.root).string() : n);
  }
  m["names"] = names;
  m["batch"] = a.batch;
  m["workers"] = workers;
  m["seed"] = a.seed;
  m["size"] = t.size;
  m["scale"] = {t.crop.scale_min, t.crop.scale_max};
  m["ratio"] = {t.crop.ratio_min, t.crop.ratio_max};
  m["flip_p"] = t.flip_p;
  m["mean"] = t.norm.mean;
  m["std"] = t.norm.std;
  TempFile file;
  {
    std::ofstream out(file.path);
    out << m.dump();
    DPLAB_CHECK(out.good(), "bench loader: cannot write {}", file.path);
  }
  return run_python_json(bench_script("torchvision_loader.py", "DPLAB_TORCHVISION_LOADER_BENCH",
                                      "--compare-torchvision"),
                         "--manifest " + shell_quote(file.path), "--compare-torchvision");
}

std::string transform_text(const ImageTransformOptions& t) {
  return fmt::format(
      "RandomResizedCrop({}, scale=({:g}, {:g}), ratio=(3/4, 4/3)) + RandomHorizontalFlip(p={:g}) "
      "+ ToTensor + Normalize(mean=({:g}, {:g}, {:g}), std=({:g}, {:g}, {:g}))",
      t.size, t.crop.scale_min, t.crop.scale_max, t.flip_p, t.norm.mean[0], t.norm.mean[1],
      t.norm.mean[2], t.norm.std[0], t.norm.std[1], t.norm.std[2]);
}

// How dplab resizes the crop (data/transforms.h): the resampling differs from Pillow's, which
// the comparison must say.
std::string resampling_text(const ImageTransformOptions& t) {
  return t.dct_scaling ? "bilinear without antialiasing, after JPEG DCT-domain downscaling where "
                         "the crop needs fewer pixels than the file holds"
                       : "bilinear without antialiasing of the full-size decode (--full-decode)";
}

int run_loader_bench(const LoaderBenchArgs& a) {
  // Decode and transform run single-threaded on each worker (the data path has no OpenMP); the
  // consuming thread gets one OpenMP thread too, so nothing else competes for the cores.
  apply_thread_option(1);
  const int cpus = usable_cpus();
  const int workers = a.workers >= 0 ? a.workers : cpus;
  const int64_t warm_batches = a.warmup >= 0 ? a.warmup : 2 * std::max(workers, 1);
  ImageTransformOptions t;  // the train transform with the training defaults (data.image_size)
  t.size = a.size;
  t.train = true;
  t.dct_scaling = !a.full_decode;
  const BenchData d = open_data(a.data, t, a.seed);
  const int64_t total = d.dataset->size();
  DPLAB_CHECK(a.images <= total, "bench loader --images {}: {} holds only {} images", a.images,
              d.dataset->describe(), total);
  const int64_t n = a.images > 0 ? a.images : std::min(total, kDefaultImageCap);
  const std::vector<int64_t> timed(d.order.begin(), d.order.begin() + n);
  // (Compared in batches first: a huge --warmup times --batch would overflow.)
  const int64_t warm_n = warm_batches >= (n + a.batch - 1) / a.batch ? n : warm_batches * a.batch;
  const std::vector<int64_t> warm(d.order.begin(), d.order.begin() + warm_n);

  // Every timed image is read once before either side is timed, so both read from the page
  // cache (otherwise the first side would pay the disk for the second). The headers give the
  // mean image size.
  double bytes = 0, width = 0, height = 0;
  for (int64_t i : timed) {
    const std::vector<uint8_t> enc = d.dataset->read_encoded(i);
    const ImageHeader h = read_image_header(enc.data(), enc.size(), d.dataset->sample_name(i));
    bytes += double(enc.size());
    width += h.width;
    height += h.height;
  }

  const SideResult r = time_dplab(d, a, workers, warm, timed);
  const double ips = double(r.images) / r.seconds;
  nlohmann::json j = {
      {"mode", "loader"},
      {"data", a.data},
      {"kind", d.kind},
      {"dataset_images", total},
      {"images", r.images},
      {"batches", r.batches},
      {"batch", a.batch},
      {"size", a.size},
      {"workers", workers},
      {"threads_per_worker", 1},
      {"cpus", cpus},
      {"warmup_batches", int64_t((warm.size() + size_t(a.batch) - 1) / size_t(a.batch))},
      {"prefetch_batches", workers > 0 ? kPrefetchBatches : 0},
      {"seed", a.seed},
      {"mean_file_kb", bytes / double(n) / 1024.0},
      {"mean_width", width / double(n)},
      {"mean_height", height / double(n)},
      {"transform", transform_text(t)},
      {"resampling", resampling_text(t)},
      {"seconds", r.seconds},
      {"images_per_s", ips},
      {"batch_shape", r.batch_shape},
      {"label_sum", r.label_sum},
      {"first_batch_labels", r.first_labels},
      {"first_batch_channel_mean", r.first_channel_mean}};
  if (a.compare) {
    const nlohmann::json tv = run_torchvision(d, a, workers, t, warm, timed);
    for (const char* k : {"framework", "dataset", "images", "batches", "seconds", "images_per_s",
                          "batch_shape", "label_sum", "first_batch_labels",
                          "first_batch_channel_mean", "prefetch_batches", "resampling"})
      j[std::string("torchvision_") + k] = tv.at(k);
    j["ratio"] = ips / tv.at("images_per_s").get<double>();
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "dplab bench loader: {} ({} of {} images timed; mean {:.1f} KB, {:.0f} x {:.0f} px), batch "
      "{}, {} x {} crops\n",
      a.data, r.images, total, bytes / double(n) / 1024.0, width / double(n), height / double(n),
      a.batch, a.size, a.size);
  std::cout << "  transform: " << transform_text(t) << "\n";
  std::cout << fmt::format(
      "  timed: read + decode + transform of every image, assembled into [batch, 3, {}, {}] f32 "
      "batches + labels and handed to one consumer that does nothing else (one process: one "
      "rank's loader, no training); the clock runs from starting the epoch to its last batch\n",
      a.size, a.size);
  const std::string who =
      workers == 0 ? "no workers: the consuming thread builds the batches (DataLoader "
                     "num_workers=0), 1 thread"
                   : fmt::format(
                         "{} worker{} x 1 thread (dplab: BatchLoader threads; torchvision: "
                         "DataLoader worker processes, torch.set_num_threads(1) in each "
                         "as DataLoader sets it)",
                         workers, workers == 1 ? "" : "s");
  std::cout << fmt::format(
      "  each side: {}, on the same {} CPU{}; {} warm-up batch{} untimed first; every image read "
      "once before timing (page cache warm for both)\n",
      who, cpus, cpus == 1 ? "" : "s", j["warmup_batches"].get<int64_t>(),
      j["warmup_batches"] == 1 ? "" : "es");
  std::cout << fmt::format("  {:<40} {:>8} {:>8} {:>9} {:>10}\n", "", "images", "batches",
                           "seconds", "images/s");
  std::cout << fmt::format("  {:<40} {:>8} {:>8} {:>9.2f} {:>10.1f}\n",
                           fmt::format("dplab {} + BatchLoader",
                                       d.kind == "folder" ? "ImageFolderDataset" : "ShardDataset"),
                           r.images, r.batches, r.seconds, ips);
  if (a.compare) {
    std::cout << fmt::format(
        "  {:<40} {:>8} {:>8} {:>9.2f} {:>10.1f}\n",
        fmt::format("torchvision {} + DataLoader", j["torchvision_dataset"].get<std::string>()),
        j["torchvision_images"].get<int64_t>(), j["torchvision_batches"].get<int64_t>(),
        j["torchvision_seconds"].get<double>(), j["torchvision_images_per_s"].get<double>());
    std::cout << fmt::format("  ratio (dplab images/s / torchvision images/s): {:.3f}\n",
                             j["ratio"].get<double>());
    std::cout << "  torchvision: " << j["torchvision_framework"].get<std::string>() << "\n";
    std::cout << fmt::format(
        "  batches built ahead: dplab {} (data.prefetch), torchvision {} (prefetch_factor 2 per "
        "worker)\n",
        j["prefetch_batches"].get<int64_t>(), j["torchvision_prefetch_batches"].get<int64_t>());
  }
  std::cout << "  resampling: dplab " << resampling_text(t);
  if (a.compare) std::cout << "; torchvision " << j["torchvision_resampling"].get<std::string>();
  std::cout << "\n";
  return 0;
}

}  // namespace

Action add_loader_bench(CLI::App& bench) {
  auto a = std::make_shared<LoaderBenchArgs>();
  CLI::App* c = bench.add_subcommand(
      "loader",
      "images/s of the training data pipeline (read + JPEG decode + RandomResizedCrop + flip + "
      "normalise + batching) of one process, as `dplab train` runs it; with "
      "--compare-torchvision, torchvision's ImageFolder + DataLoader on the same images");
  c->add_option("--data", a->data,
                "folder:DIR (<class>/<file> images; DIR/train if DIR has train/ and val/) or "
                "shards:GLOB (tar shards), as train's option data")
      ->required();
  c->add_option("--workers", a->workers,
                "loader workers on each side, each single-threaded (dplab threads, DataLoader "
                "processes; 0: on the consuming thread); default: the CPUs this process may use")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--images", a->images,
                fmt::format("images timed, the first of the training epoch's order (default: "
                            "all, at most {})",
                            kDefaultImageCap))
      ->check(CLI::NonNegativeNumber);
  c->add_option("--warmup", a->warmup,
                "untimed batches first, on each side, of the first timed images (default: 2 per "
                "worker, at least 2; at most all the timed images)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--batch", a->batch, "images per batch (one batch of 4096 at 224 px is 2.3 GiB)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(4096)));
  c->add_option("--size", a->size, "crop side in pixels (train's data.image_size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  c->add_option("--seed", a->seed, "seed of the epoch order and the random crops")
      ->capture_default_str();
  c->add_flag("--compare-torchvision", a->compare,
              "also time torchvision (ImageFolder, or a tarfile Dataset for shards) + DataLoader "
              "with the same transform, images, order, batch and worker count "
              "(tools/bench/torchvision_loader.py, /usr/bin/python3 or $DPLAB_PYTHON), and print "
              "the ratio");
  c->add_flag("--full-decode", a->full_decode,
              "decode every JPEG at full size, as Pillow does (dplab's training decodes in the "
              "DCT domain at the smallest scale the crop allows)");
  c->add_flag("--json", a->json, "print one JSON object instead of the table");
  return [a]() { return run_loader_bench(*a); };
}

}  // namespace dplab::cli
