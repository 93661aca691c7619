// The data sets `dplab train` knows (option data): "shards:GLOB" (tar shards, data/shards.h),
// "folder:DIR" (an image folder, data/image_folder.h; DIR/train and DIR/val when both exist),
// and MNIST-format IDX files (data/mnist.h): "mnist", "fashion-mnist", or any name with
// data.dir. Registry::with_builtins() registers them; dplab eval loads through them too.
#pragma once
#include <memory>
#include <string>

#include "dplab/train/config/registry.h"

namespace dplab {

// "shards:GLOB" or "folder:DIR": the train split with RandomResizedCrop + flip, the test split
// (data.val, or the training data with a notice) with Resize + CenterCrop.
TrainData load_image_data(const std::string& spec, const Options& opt);
// The evaluation set `dplab eval` names with "shards:GLOB" or "folder:DIR": data.val when
// given, DIR/val of a folder:DIR with train/ and val/, else the data named itself (Resize +
// CenterCrop).
std::shared_ptr<Dataset> load_image_eval_data(const std::string& spec, const Options& opt);
// IDX files in data.dir, or found by `name` (data/mnist.h find_dataset_dir).
TrainData load_idx_data(const std::string& name, const Options& opt);
// The test split alone of IDX data (dplab eval).
std::shared_ptr<Dataset> load_idx_test(const std::string& name, const Options& opt);

void add_builtin_datasets(Registry& r);

}  // namespace dplab
