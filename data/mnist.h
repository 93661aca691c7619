// MNIST and Fashion-MNIST in memory: u8 images [N, 28, 28] and labels, served as f32
// [1, 28, 28] = pixel / 255 (no mean/std normalisation, as in the hybrid-SGD thesis).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/data/dataset.h"
#include "dplab/data/idx.h"

namespace dplab {

class MnistDataset : public Dataset {
 public:
  // Checks that images and labels agree in count and that labels are < num_classes.
  MnistDataset(std::string name, IdxImages images, std::vector<uint8_t> labels,
               int num_classes = 10);
  int64_t size() const override { return images_.count; }
  Shape sample_shape() const override { return {1, images_.rows, images_.cols}; }
  int num_classes() const override { return num_classes_; }
  std::string describe() const override;
  int64_t get_into(int64_t index, float* out) const override;
  const IdxImages& images() const { return images_; }
  const std::vector<uint8_t>& labels() const { return labels_; }

 private:
  std::string name_;
  IdxImages images_;
  std::vector<uint8_t> labels_;
  int num_classes_;
};

// Loads split "train" or "test" from `dir`, which holds the usual file names
// ({train,t10k}-{images-idx3,labels-idx1}-ubyte, each optionally with .gz). `limit` > 0 keeps
// only the first `limit` samples (fast tests). Every label must be below `num_classes`; an error
// names the labels file and the label's byte offset.
std::shared_ptr<MnistDataset> load_mnist(const std::string& dir, const std::string& split,
                                         int64_t limit = 0, int num_classes = 10);

// Known dataset names ("mnist", "fashion-mnist") and where to find them: $DPLAB_DATA/<name>,
// then the default location (~/.cache/dplab/data/mnist for mnist,
// /usr/share/datasets/fashion-mnist for fashion-mnist, where Debian's dataset-fashion-mnist
// puts it). Throws, saying how to fetch it, when no directory has the files.
std::string find_dataset_dir(const std::string& name);
// Where `dplab data fetch mnist` writes by default: $DPLAB_DATA/mnist or
// ~/.cache/dplab/data/mnist.
std::string default_fetch_dir(const std::string& name);
std::vector<std::string> dataset_names();
// True if `dir` holds the four IDX files.
bool has_mnist_files(const std::string& dir);

}  // namespace dplab
