#include "dplab/train/config/builtin_datasets.h"
#include "dplab/core/usage_error.h"

#include <cstdio>
#include <filesystem>

#include "dplab/data/image_folder.h"
#include "dplab/data/mnist.h"
#include "dplab/data/shards.h"
#include "dplab/train/config/config.h"

namespace dplab {
namespace {

std::string get(const Options& opt, const std::string& key) {
  return train_option_table().get_string(opt, key);
}
int64_t get_int(const Options& opt, const std::string& key) {
  return train_option_table().get_int(opt, key);
}

// data.num_classes: 0 (not given) or the class count every label must be below.
int num_classes_option(const Options& opt) {
  const int64_t n = get_int(opt, "data.num_classes");
  DPLAB_CHECK_OPTION(n >= 0 && n <= (int64_t(1) << 24),
                     "option data.num_classes: expected 0 (not given) to 16777216, got {}", n);
  return int(n);
}

// MNIST-style IDX data: 10 classes unless data.num_classes says otherwise (u8 labels).
int idx_classes(const Options& opt) {
  const int n = num_classes_option(opt);
  DPLAB_CHECK_OPTION(n <= 256,
                     "option data.num_classes: IDX labels are bytes, so at most 256, got {}", n);
  return n > 0 ? n : 10;
}

// NAME or NAME:DIR, or data.dir (data/mnist.h idx_dataset_dir).
std::string idx_dir(const std::string& name, const Options& opt) {
  return idx_dataset_dir(name, get(opt, "data.dir"));
}

// "shards:GLOB" or "folder:DIR" with the train (RandomResizedCrop + flip) or eval (Resize +
// CenterCrop) transform.
std::shared_ptr<Dataset> image_data(const std::string& spec, bool train, const Options& opt) {
  ImageTransformOptions t;
  t.size = int(get_int(opt, "data.image_size"));
  t.train = train;
  t.max_pixels = get_int(opt, "data.max_image_pixels");
  DPLAB_CHECK_OPTION(t.max_pixels > 0, "option data.max_image_pixels: expected > 0, got {}",
                     t.max_pixels);
  const OnError on_error = parse_on_error(get(opt, "data.on_error"));
  const int num_classes = num_classes_option(opt);
  if (spec.starts_with("shards:"))
    return std::make_shared<ShardDataset>(expand_glob(spec.substr(7)), t, on_error, num_classes);
  if (spec.starts_with("folder:")) {
    auto folder = std::make_shared<ImageFolderDataset>(spec.substr(7), t, on_error);
    DPLAB_CHECK(num_classes == 0 || folder->num_classes() <= num_classes,
                "image folder {} has {} class directories, more than data.num_classes = {}",
                spec.substr(7), folder->num_classes(), num_classes);
    return folder;
  }
  DPLAB_FAIL_OPTION("option data.val '{}': expected shards:GLOB or folder:DIR", spec);
}

}  // namespace

TrainData load_image_data(const std::string& name, const Options& opt) {
  TrainData d;
  d.images = true;
  std::string train_spec = name, val_spec = get(opt, "data.val");
  const std::string dir = name.substr(7);
  // folder:DIR with DIR/train and DIR/val: the usual ImageNet layout.
  if (name.starts_with("folder:") && std::filesystem::is_directory(dir + "/train") &&
      std::filesystem::is_directory(dir + "/val")) {
    train_spec = "folder:" + dir + "/train";
    if (val_spec.empty()) val_spec = "folder:" + dir + "/val";
  }
  d.train = image_data(train_spec, true, opt);
  if (val_spec.empty()) {
    std::fprintf(stderr, "dplab train: no data.val given: evaluating on the training data\n");
    val_spec = train_spec;
  }
  d.test = image_data(val_spec, false, opt);
  return d;
}

std::shared_ptr<Dataset> load_image_eval_data(const std::string& name, const Options& opt) {
  std::string spec = get(opt, "data.val");
  const std::string dir = name.substr(7);
  if (spec.empty() && name.starts_with("folder:") &&
      std::filesystem::is_directory(dir + "/train") && std::filesystem::is_directory(dir + "/val"))
    spec = "folder:" + dir + "/val";
  return image_data(spec.empty() ? name : spec, false, opt);
}

TrainData load_idx_data(const std::string& name, const Options& opt) {
  const std::string dir = idx_dir(name, opt);
  TrainData d;
  d.train = load_mnist(dir, "train", get_int(opt, "data.train_limit"), idx_classes(opt));
  d.test = load_mnist(dir, "test", get_int(opt, "data.test_limit"), idx_classes(opt));
  return d;
}

std::shared_ptr<Dataset> load_idx_test(const std::string& name, const Options& opt) {
  return load_mnist(idx_dir(name, opt), "test", get_int(opt, "data.test_limit"), idx_classes(opt));
}

void add_builtin_datasets(Registry& r) {
  const std::vector<std::string> image_keys = {"data.val", "data.image_size", "data.on_error",
                                               "data.max_image_pixels", "data.num_classes"};
  const std::vector<std::string> idx_keys = {"data.dir", "data.train_limit", "data.test_limit",
                                             "data.num_classes"};
  r.add(DatasetEntry{"shards:", "shards:GLOB: tar shards of encoded images (dplab shards)",
                     image_keys, load_image_data});
  r.add(DatasetEntry{"folder:", "folder:DIR: an image folder (DIR/CLASS/*.jpg; DIR/train, DIR/val)",
                     image_keys, load_image_data});
  r.add(DatasetEntry{"*",
                     "NAME: MNIST-format IDX files in data.dir (or found for mnist, "
                     "fashion-mnist)",
                     idx_keys, load_idx_data});
}

}  // namespace dplab
