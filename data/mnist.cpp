#include "dplab/data/mnist.h"

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
  return {"fashion-mnist", "mnist"};
}

std::string default_fetch_dir(const std::string& name) {
  if (const char* d = std::getenv("DPLAB_DATA"); d && *d) return (fs::path(d) / name).string();
  return (fs::path(home_dir()) / ".cache" / "dplab" / "data" / name).string();
}

std::string find_dataset_dir(const std::string& name) {
  std::vector<std::string> candidates;
  if (const char* d = std::getenv("DPLAB_DATA"); d && *d)
    candidates.push_back((fs::path(d) / name).string());
  if (name == "fashion-mnist") {
    candidates.push_back("/usr/share/datasets/fashion-mnist");
  } else if (name == "mnist") {
    candidates.push_back((fs::path(home_dir()) / ".cache" / "dplab" / "data" / "mnist").string());
  } else {
    DPLAB_FAIL("unknown dataset '{}' (known: fashion-mnist, mnist)", name);
  }
  for (const auto& c : candidates)
    if (has_mnist_files(c)) return c;
  std::string tried;
  for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  DPLAB_FAIL(
      "dataset '{}' not found (looked in {}); run `dplab data fetch {}` or set "
      "--set data.dir=DIR",
      name, tried, name);
}

}  // namespace dplab
