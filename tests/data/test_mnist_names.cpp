// The IDX data sets by name (data/mnist.h): `mnist` is the standard 60,000 / 10,000 MNIST and
// refuses the 10,000-digit subset (now `mnist-10k`), NAME:DIR and data.dir name the directory,
// and the counts are checked. The IDX files are written here with hand-chosen counts; only the
// label files' counts matter to the checks, so the image files are one-image stubs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "common/harness.h"
#include "dplab/core/error.h"
#include "dplab/data/idx.h"
#include "dplab/data/mnist.h"
#include "temp_dir.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;

// An IDX directory whose label files hold `train` and `test` labels.
std::string idx_dir(const test::ScopedTempDir& dir, const std::string& name, int64_t train,
                    int64_t test) {
  const fs::path d = dir.path / name;
  fs::create_directories(d);
  IdxImages stub;
  stub.count = 1;
  stub.rows = stub.cols = 28;
  stub.pixels.assign(28 * 28, 0);
  for (const auto& [pre, n] : {std::pair<std::string, int64_t>{"train", train}, {"t10k", test}}) {
    write_idx_images((d / (pre + "-images-idx3-ubyte.gz")).string(), stub);
    write_idx_labels((d / (pre + "-labels-idx1-ubyte.gz")).string(),
                     std::vector<uint8_t>(size_t(n), 3));
  }
  return d.string();
}

using test::error_of;  // tests/common/harness.h

TEST(MnistNames, StandardMnistByDirectory) {
  test::ScopedTempDir dir("mnist-names-std");
  const std::string full = idx_dir(dir, "full", 60000, 10000);
  EXPECT_EQ(idx_dataset_dir("mnist:" + full, ""), full);
  EXPECT_EQ(idx_dataset_dir("mnist", full), full);  // data.dir
  const auto c = idx_split_counts(full);
  EXPECT_EQ(c.train, 60000);
  EXPECT_EQ(c.test, 10000);
  // The same directory as mnist-10k: refused, pointing to mnist.
  EXPECT_NE(error_of([&] {
              idx_dataset_dir("mnist-10k:" + full, "");
            }).find("found 60000 / 10000; that is the standard MNIST: use --data mnist"),
            std::string::npos);
  // Two different directories.
  EXPECT_NE(error_of([&] {
              idx_dataset_dir("mnist:" + full, "/elsewhere");
            }).find("name two directories"),
            std::string::npos);
}

TEST(MnistNames, TheTenThousandDigitSubsetIsMnist10k) {
  test::ScopedTempDir dir("mnist-names-10k");
  const std::string sub = idx_dir(dir, "sub", 8000, 2000);
  EXPECT_EQ(idx_dataset_dir("mnist-10k:" + sub, ""), sub);
  const std::string e = error_of([&] { idx_dataset_dir("mnist:" + sub, ""); });
  EXPECT_NE(e.find("holds the 10,000-digit MNIST subset"), std::string::npos) << e;
  EXPECT_NE(e.find("--data mnist-10k:" + sub), std::string::npos) << e;
  // Other counts under `mnist`: what was expected and found.
  const std::string odd = idx_dir(dir, "odd", 100, 20);
  EXPECT_NE(error_of([&] { idx_dataset_dir("mnist:" + odd, ""); })
                .find("expected the standard MNIST IDX files (60,000 train / 10,000 test images), "
                      "found 100 / 20"),
            std::string::npos);
  // fashion-mnist:DIR takes any counts (tests use small subsets).
  EXPECT_EQ(idx_dataset_dir("fashion-mnist:" + odd, ""), odd);
}

TEST(MnistNames, UnknownNamesAndMissingFiles) {
  test::ScopedTempDir dir("mnist-names-bad");
  EXPECT_NE(error_of([] { idx_dataset_dir("mnistt", ""); }).find("unknown dataset 'mnistt'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              idx_dataset_dir("mnist:" + dir.file("none"), "");
            }).find("expected the IDX files"),
            std::string::npos);
  // No standard MNIST anywhere: says how to give it.
  // (HOME and DPLAB_DATA point into the test's directory, restored after.)
  const char* home = std::getenv("HOME");
  const std::string old_home = home ? home : "";
  const char* data = std::getenv("DPLAB_DATA");
  const std::string old_data = data ? data : "";
  ::setenv("DPLAB_DATA", dir.file("empty").c_str(), 1);
  ::setenv("HOME", dir.file("home").c_str(), 1);
  const std::string e = error_of([] { idx_dataset_dir("mnist", ""); });
  ::unsetenv("DPLAB_DATA");
  if (data) ::setenv("DPLAB_DATA", old_data.c_str(), 1);
  if (home) ::setenv("HOME", old_home.c_str(), 1);
  EXPECT_NE(e.find("give their directory with --data mnist:DIR"), std::string::npos) << e;
}

}  // namespace
}  // namespace dplab
