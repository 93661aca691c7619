#include "dplab/data/mnist.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "dplab/core/error.h"

namespace dplab {
namespace fs = std::filesystem;

MnistDataset::MnistDataset(std::string name, IdxImages images, std::vector<uint8_t> labels,
                           int num_classes)
    : name_(std::move(name)),
      images_(std::move(images)),
      labels_(std::move(labels)),
      num_classes_(num_classes) {
  DPLAB_CHECK(int64_t(labels_.size()) == images_.count,
              "{}: image/label count mismatch: {} images but {} labels", name_, images_.count,
              labels_.size());
  DPLAB_CHECK(num_classes_ > 0 && num_classes_ <= 256, "{}: {} classes: u8 labels need 1 to 256",
              name_, num_classes_);
  for (size_t i = 0; i < labels_.size(); ++i)
    DPLAB_CHECK(labels_[i] < num_classes_,
                "labels of {}: label {} of sample {} is out of range: expected 0 to {}", name_,
                int(labels_[i]), i, num_classes_ - 1);
}

std::string MnistDataset::describe() const {
  return fmt::format("{} ({} images of {}x{})", name_, images_.count, images_.rows, images_.cols);
}

int64_t MnistDataset::get_into(int64_t index, float* out) const {
  const int64_t n = images_.rows * images_.cols;
  const uint8_t* p = images_.pixels.data() + index * n;
  for (int64_t i = 0; i < n; ++i) out[i] = float(p[i]) / 255.0f;
  return labels_[index];
}

namespace {

// The file for `stem` in `dir`: stem or stem.gz.
std::string locate(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    fs::path p = fs::path(dir) / (stem + suffix);
    if (fs::exists(p)) return p.string();
  }
  return {};
}

const char* prefix_of(const std::string& split) {
  if (split == "train") return "train";
  if (split == "test") return "t10k";
  DPLAB_FAIL("unknown split '{}' (expected train or test)", split);
}

std::string home_dir() {
  const char* h = std::getenv("HOME");
  return h && *h ? h : "/root";
}

}  // namespace

bool has_mnist_files(const std::string& dir) {
  for (const char* split : {"train", "test"})
    for (const char* kind : {"images-idx3", "labels-idx1"})
      if (locate(dir, fmt::format("{}-{}-ubyte", prefix_of(split), kind)).empty()) return false;
  return true;
}

std::shared_ptr<MnistDataset> load_mnist(const std::string& dir, const std::string& split,
                                         int64_t limit, int num_classes) {
  const std::string pre = prefix_of(split);
  const std::string img = locate(dir, pre + "-images-idx3-ubyte");
  const std::string lab = locate(dir, pre + "-labels-idx1-ubyte");
  DPLAB_CHECK(!img.empty(), "{}: no {}-images-idx3-ubyte[.gz] for the {} split", dir, pre, split);
  DPLAB_CHECK(!lab.empty(), "{}: no {}-labels-idx1-ubyte[.gz] for the {} split", dir, pre, split);
  IdxImages images = read_idx_images(img);
  DPLAB_CHECK(images.rows == 28 && images.cols == 28,
              "{}: wrong image dims {}x{} (MNIST and Fashion-MNIST images are 28x28)", img,
              images.rows, images.cols);
  std::vector<uint8_t> labels = read_idx_labels(lab);
  DPLAB_CHECK(int64_t(labels.size()) == images.count,
              "image/label count mismatch: {} has {} images but {} has {} labels", img,
              images.count, lab, labels.size());
  DPLAB_CHECK(num_classes > 0 && num_classes <= 256, "{}: {} classes: u8 labels need 1 to 256", lab,
              num_classes);
  for (size_t i = 0; i < labels.size(); ++i)
    DPLAB_CHECK(labels[i] < num_classes,
                "{}: label {} at byte offset {} (sample {}) is out of range: expected 0 to {}", lab,
                int(labels[i]), 8 + i, i, num_classes - 1);
  if (limit > 0 && limit < images.count) {
    images.count = limit;
    images.pixels.resize(size_t(limit * images.rows * images.cols));
    labels.resize(size_t(limit));
  }
  return std::make_shared<MnistDataset>(img, std::move(images), std::move(labels), num_classes);
}

std::vector<std::string> dataset_names() {
  return {"fashion-mnist", "mnist", "mnist-10k"};
}

std::string default_fetch_dir(const std::string& name) {
  if (const char* d = std::getenv("DPLAB_DATA"); d && *d) return (fs::path(d) / name).string();
  return (fs::path(home_dir()) / ".cache" / "dplab" / "data" / name).string();
}

IdxSplitCounts idx_split_counts(const std::string& dir) {
  IdxSplitCounts c;
  for (const char* split : {"train", "test"}) {
    const std::string lab = locate(dir, fmt::format("{}-labels-idx1-ubyte", prefix_of(split)));
    DPLAB_CHECK(!lab.empty(), "{}: no {}-labels-idx1-ubyte[.gz]", dir, prefix_of(split));
    (split[1] == 'r' ? c.train : c.test) = int64_t(read_idx_labels(lab).size());
  }
  return c;
}

namespace {

// `mnist` is the standard set; the 10,000-digit subset (mnist-10k) is refused under that name.
void check_dataset_counts(const std::string& name, const std::string& dir) {
  if (name != "mnist" && name != "mnist-10k") return;
  const IdxSplitCounts c = idx_split_counts(dir);
  if (name == "mnist") {
    DPLAB_CHECK(!(c.train == kMnist10kTrain && c.test == kMnist10kTest),
                "{} holds the 10,000-digit MNIST subset (8,000 train / 2,000 test) that older "
                "dplab versions fetched as 'mnist': use --data mnist-10k:{} for it; --data mnist "
                "is the standard MNIST (60,000 / 10,000 IDX files, give their directory with "
                "--data mnist:DIR)",
                dir, dir);
    DPLAB_CHECK(c.train == kMnistTrain && c.test == kMnistTest,
                "{}: expected the standard MNIST IDX files (60,000 train / 10,000 test images), "
                "found {} / {}",
                dir, c.train, c.test);
  } else {
    DPLAB_CHECK(c.train == kMnist10kTrain && c.test == kMnist10kTest,
                "{}: expected the mnist-10k subset (8,000 train / 2,000 test, `dplab data fetch "
                "mnist-10k`), found {} / {}{}",
                dir, c.train, c.test,
                c.train == kMnistTrain ? "; that is the standard MNIST: use --data mnist" : "");
  }
}

}  // namespace

std::string find_dataset_dir(const std::string& name) {
  std::vector<std::string> candidates;
  if (const char* d = std::getenv("DPLAB_DATA"); d && *d)
    candidates.push_back((fs::path(d) / name).string());
  const fs::path cache = fs::path(home_dir()) / ".cache" / "dplab" / "data";
  if (name == "fashion-mnist") {
    candidates.push_back("/usr/share/datasets/fashion-mnist");
  } else if (name == "mnist") {
    candidates.push_back((cache / "mnist").string());
    candidates.push_back("/usr/share/datasets/mnist");
  } else if (name == "mnist-10k") {
    candidates.push_back((cache / "mnist-10k").string());
  } else {
    DPLAB_FAIL(
        "unknown dataset '{}' (known: fashion-mnist, mnist, mnist-10k; or "
        "shards:GLOB, folder:DIR)",
        name);
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (has_mnist_files(c)) {
      check_dataset_counts(name, c);
      return c;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (name == "mnist")
    DPLAB_FAIL(
        "dataset 'mnist' (the standard 60,000 / 10,000 MNIST IDX files) not found (looked "
        "in {}); give their directory with --data mnist:DIR (or --set data.dir=DIR); "
        "`dplab data fetch mnist-10k` installs the 10,000-digit subset as mnist-10k",
        tried);
  DPLAB_FAIL(
      "dataset '{}' not found (looked in {}); run `dplab data fetch {}` or give the directory "
      "with --data {}:DIR",
      name, tried, name, name);
}

std::string idx_dataset_dir(const std::string& spec, const std::string& data_dir) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const auto names = dataset_names();
  DPLAB_CHECK(std::find(names.begin(), names.end(), name) != names.end(),
              "unknown dataset '{}' (known: fashion-mnist, mnist, mnist-10k, each optionally "
              "NAME:DIR; or shards:GLOB, folder:DIR)",
              spec);
  std::string dir = colon == std::string::npos ? data_dir : spec.substr(colon + 1);
  DPLAB_CHECK(colon == std::string::npos || data_dir.empty() || data_dir == dir,
              "--data {} and data.dir = {} name two directories", spec, data_dir);
  if (dir.empty()) return find_dataset_dir(name);
  DPLAB_CHECK(has_mnist_files(dir),
              "{}: expected the IDX files {{train,t10k}}-{{images-idx3,labels-idx1}}-ubyte[.gz] "
              "of dataset '{}'",
              dir, name);
  check_dataset_counts(name, dir);
  return dir;
}

}  // namespace dplab
