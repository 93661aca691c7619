// `dplab bench loader`: on tiny generated JPEG sets (a folder and tar shards) the command runs
// the training pipeline over the images it says it timed, at 1 and 2 workers, and the
// torchvision side runs over the same images in the same order. No timing assertions (the
// machine is shared): counts, shapes, labels and pixel values are checked against what the test
// wrote. Every image of class k is one uniform colour, so any crop, flip or resampling of it is
// that colour, and a batch's per-channel mean of normalised pixels follows from its labels by
// hand: (colour / 255 - mean) / std with ImageNet's constants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/temp_dir.h"
#include "dplab/data/decode.h"
#include "dplab/data/sampler.h"
#include "dplab/data/shards.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;

// Class k's colour, the images per class and their sizes (width, height), cycled.
constexpr int kColour[3][3] = {{200, 40, 40}, {40, 180, 60}, {30, 60, 220}};
constexpr int kPerClass[3] = {4, 3, 5};
constexpr int kSizes[4][2] = {{48, 36}, {36, 48}, {64, 40}, {50, 50}};
constexpr int64_t kImages = 12;    // 4 + 3 + 5
constexpr int64_t kLabelSum = 13;  // 0 * 4 + 1 * 3 + 2 * 5
constexpr double kMean[3] = {0.485, 0.456, 0.406}, kStd[3] = {0.229, 0.224, 0.225};

struct JpegSet {
  double mean_bytes = 0, mean_width = 0, mean_height = 0;
};

// DIR/<class k>/<n>.jpg, classes named so that sorting gives k.
JpegSet write_folder(const fs::path& root) {
  JpegSet s;
  int n = 0;
  for (int k = 0; k < 3; ++k) {
    const fs::path dir = root / fmt::format("class{}", k);
    fs::create_directories(dir);
    for (int i = 0; i < kPerClass[k]; ++i, ++n) {
      const int w = kSizes[n % 4][0], h = kSizes[n % 4][1];
      std::vector<uint8_t> px(size_t(w * h * 3));
      for (size_t p = 0; p < px.size(); ++p) px[p] = uint8_t(kColour[k][p % 3]);
      const auto jpg = encode_jpeg(px.data(), w, h, 3, {95, 444, false});
      std::ofstream(dir / fmt::format("{:03d}.jpg", n), std::ios::binary)
          .write(reinterpret_cast<const char*>(jpg.data()), long(jpg.size()));
      s.mean_bytes += double(jpg.size()) / kImages;
      s.mean_width += double(w) / kImages;
      s.mean_height += double(h) / kImages;
    }
  }
  return s;
}

nlohmann::json run_json(const std::string& args, const fs::path& scratch) {
  const auto r = run_dplab("bench loader " + args + " --json", scratch);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return {};
  try {
    return nlohmann::json::parse(r.out);  // exactly one JSON object on stdout
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << " in " << r.out;
    return {};
  }
}

// The per-channel mean a batch with these labels must have.
void expect_channel_means(const nlohmann::json& labels, const nlohmann::json& means,
                          const std::string& who) {
  ASSERT_TRUE(labels.is_array() && !labels.empty()) << who;
  ASSERT_TRUE(means.is_array() && means.size() == 3) << who;
  for (int c = 0; c < 3; ++c) {
    double want = 0;
    for (const auto& l : labels) {
      const int k = l.get<int>();
      ASSERT_TRUE(k >= 0 && k < 3) << who << " label " << k;
      want += (kColour[k][c] / 255.0 - kMean[c]) / kStd[c] / double(labels.size());
    }
    // JPEG keeps a uniform colour to about a level out of 255 (3 levels: 0.05 after / std).
    EXPECT_NEAR(means[size_t(c)].get<double>(), want, 0.05) << who << " channel " << c;
  }
}

// What every run over the whole 12-image set reports, for dplab (prefix "") or torchvision.
void expect_whole_set(const nlohmann::json& j, const std::string& prefix, int64_t batch, int size) {
  const std::string who = prefix.empty() ? "dplab" : prefix;
  EXPECT_EQ(j[prefix + "images"], kImages) << who;
  EXPECT_EQ(j[prefix + "batches"], (kImages + batch - 1) / batch) << who;
  EXPECT_EQ(j[prefix + "batch_shape"], nlohmann::json({batch, 3, size, size})) << who;
  EXPECT_EQ(j[prefix + "label_sum"], kLabelSum) << who;
  EXPECT_EQ(j[prefix + "first_batch_labels"].size(), size_t(batch)) << who;
  expect_channel_means(j[prefix + "first_batch_labels"], j[prefix + "first_batch_channel_mean"],
                       who);
  EXPECT_GT(j[prefix + "seconds"].get<double>(), 0) << who;
  EXPECT_NEAR(j[prefix + "images_per_s"].get<double>(),
              double(kImages) / j[prefix + "seconds"].get<double>(),
              1e-9 * j[prefix + "images_per_s"].get<double>())
      << who;
}

void expect_set_description(const nlohmann::json& j, const JpegSet& s) {
  EXPECT_EQ(j["dataset_images"], kImages);
  EXPECT_NEAR(j["mean_file_kb"].get<double>(), s.mean_bytes / 1024.0, 1e-9);
  EXPECT_NEAR(j["mean_width"].get<double>(), s.mean_width, 1e-9);
  EXPECT_NEAR(j["mean_height"].get<double>(), s.mean_height, 1e-9);
}

// The labels of the first 5 images of the training order of the 12-image folder.
nlohmann::json first_labels_of_sampler_order() {
  SamplerOptions so;
  so.shuffle = true;
  const std::vector<int64_t> order = DistributedSampler(kImages, so).indices();
  nlohmann::json labels = nlohmann::json::array();
  for (size_t i = 0; i < 5; ++i) labels.push_back(order[i] < 4 ? 0 : order[i] < 7 ? 1 : 2);
  return labels;
}

TEST(BenchLoader, FolderAtOneAndTwoWorkersTimesEveryImage) {
  ScopedTempDir dir("bench-loader-folder");
  const JpegSet set = write_folder(dir.path / "images");
  for (int w : {1, 2}) {
    SCOPED_TRACE(testing::Message() << w << " workers");
    const auto j = run_json(
        fmt::format("--data folder:{} --workers {} --batch 5 --size 32", dir.file("images"), w),
        dir.path / "run");
    ASSERT_TRUE(j.is_object());
    expect_whole_set(j, "", 5, 32);
    expect_set_description(j, set);
    EXPECT_EQ(j["workers"], w);
    EXPECT_EQ(j["threads_per_worker"], 1);
    EXPECT_EQ(j["kind"], "folder");
    // The default: two batches per worker, of the timed images, so at most all 12 (3 batches).
    EXPECT_EQ(j["warmup_batches"], std::min(2 * w, 3));
    EXPECT_NE(j["transform"].get<std::string>().find("RandomResizedCrop(32"), std::string::npos);
    EXPECT_FALSE(j.contains("ratio"));  // only with --compare-torchvision
    // The epoch order is the trainer's: its sampler (seed 0, epoch 0) over the files sorted by
    // class and name, i.e. file k of the 12 has label 0 for k < 4, 1 for k < 7, else 2.
    EXPECT_EQ(j["first_batch_labels"], first_labels_of_sampler_order());
  }
}

TEST(BenchLoader, ShardsAtOneAndTwoWorkersTimesEveryImage) {
  ScopedTempDir dir("bench-loader-shards");
  const JpegSet set = write_folder(dir.path / "images");
  ShardWriteOptions wo;
  wo.per_shard = 5;
  write_shards(dir.file("images"), dir.file("shards/s"), wo);  // 5 + 5 + 2 images
  for (int w : {1, 2}) {
    SCOPED_TRACE(testing::Message() << w << " workers");
    const auto j = run_json(fmt::format("--data 'shards:{}/shards/s-*.tar' --workers {} --batch 5 "
                                        "--size 24 --warmup 1",
                                        dir.path.string(), w),
                            dir.path / "run");
    ASSERT_TRUE(j.is_object());
    expect_whole_set(j, "", 5, 24);
    expect_set_description(j, set);
    EXPECT_EQ(j["kind"], "shards");
    EXPECT_EQ(j["workers"], w);
    EXPECT_EQ(j["warmup_batches"], 1);
    // The trainer's order for shards: the shard stream of rank 0 of 1 (seed 0, epoch 0, the
    // default shuffle buffer of 1000).
    const ShardDataset shards(expand_glob(dir.path.string() + "/shards/s-*.tar"), {});
    const std::vector<int64_t> order = shard_stream_order(shards.shard_begin(), 0, 1, 0, 0, 1000);
    nlohmann::json labels = nlohmann::json::array();
    for (size_t i = 0; i < 5; ++i) labels.push_back(shards.label(order[i]));
    EXPECT_EQ(j["first_batch_labels"], labels);
  }
}

TEST(BenchLoader, ImagesOptionTimesThatManyAndTheTableSaysWhat) {
  ScopedTempDir dir("bench-loader-count");
  write_folder(dir.path / "images");
  const auto j =
      run_json(fmt::format("--data folder:{} --workers 0 --batch 4 --size 16 --images 7 --warmup 0",
                           dir.file("images")),
               dir.path / "run");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["images"], 7);
  EXPECT_EQ(j["batches"], 2);  // 4 + 3
  EXPECT_EQ(j["batch_shape"], nlohmann::json({4, 3, 16, 16}));
  EXPECT_EQ(j["warmup_batches"], 0);
  EXPECT_EQ(j["workers"], 0);
  expect_channel_means(j["first_batch_labels"], j["first_batch_channel_mean"], "dplab");
  EXPECT_NE(j["resampling"].get<std::string>().find("DCT-domain"), std::string::npos);

  // --full-decode: the same images, JPEGs decoded at full size (as Pillow does).
  const auto full = run_json(fmt::format("--data folder:{} --workers 1 --batch 4 --size 16 "
                                         "--images 7 --full-decode",
                                         dir.file("images")),
                             dir.path / "full");
  ASSERT_TRUE(full.is_object());
  EXPECT_EQ(full["images"], 7);
  EXPECT_EQ(full["first_batch_labels"], j["first_batch_labels"]);
  expect_channel_means(full["first_batch_labels"], full["first_batch_channel_mean"], "full");
  EXPECT_NE(full["resampling"].get<std::string>().find("full-size"), std::string::npos);

  const auto t = run_dplab(
      fmt::format("bench loader --data folder:{} --workers 1 --batch 4 --size 16 --images 7",
                  dir.file("images")),
      dir.path / "table");
  ASSERT_EQ(t.status, 0) << t.err;
  for (const char* s : {"7 of 12 images timed", "images/s", "RandomResizedCrop(16",
                        "1 worker x 1 thread", "page cache"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << " in\n" << t.out;
}

// folder:DIR with DIR/train and DIR/val reads DIR/train, as `dplab train` does.
TEST(BenchLoader, FolderWithTrainAndValUsesTrain) {
  ScopedTempDir dir("bench-loader-trainval");
  write_folder(dir.path / "set" / "train");
  fs::create_directories(dir.path / "set" / "val" / "class0");
  const auto j =
      run_json(fmt::format("--data folder:{} --workers 1 --batch 6 --size 8", dir.file("set")),
               dir.path / "run");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["images"], kImages);
  EXPECT_EQ(j["label_sum"], kLabelSum);
}

TEST(BenchLoader, BadInputIsAClearError) {
  ScopedTempDir dir("bench-loader-errors");
  fs::create_directories(dir.path / "empty" / "class0");
  auto r = run_dplab("bench loader --data folder:" + dir.file("empty"), dir.path / "a");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no images found"), std::string::npos) << r.err;
  r = run_dplab("bench loader --data folder:" + dir.file("missing"), dir.path / "b");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
  r = run_dplab("bench loader --data imagenet:" + dir.file("empty"), dir.path / "c");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("expected folder:DIR or shards:GLOB"), std::string::npos) << r.err;
  r = run_dplab("bench loader --data 'shards:" + dir.file("none-*.tar") + "'", dir.path / "d");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no shard files match"), std::string::npos) << r.err;
  r = run_dplab("bench loader --workers 1", dir.path / "e");  // --data is required
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--data"), std::string::npos) << r.err;
  r = run_dplab("bench loader --data folder:x --batch 0", dir.path / "f");
  EXPECT_EQ(r.status, 2) << r.err;
  write_folder(dir.path / "images");
  r = run_dplab("bench loader --data folder:" + dir.file("images") + " --images 13",
                dir.path / "g");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("holds only 12 images"), std::string::npos) << r.err;
}

// The interpreter the command runs for --compare-torchvision, and whether it has torchvision.
bool python_has_torchvision(std::string& why) {
  const char* py = std::getenv("DPLAB_PYTHON");
  const std::string exe = py ? py : "/usr/bin/python3";
  if (std::system((exe + " -c 'import torchvision, PIL' >/dev/null 2>&1").c_str()) == 0)
    return true;
  why = exe + " cannot import torchvision and PIL (python3-torchvision not installed?)";
  return false;
}

void expect_same_images_both_sides(const nlohmann::json& j, int64_t batch, int size) {
  expect_whole_set(j, "", batch, size);
  expect_whole_set(j, "torchvision_", batch, size);
  // The same images in the same order: the first batch holds the same labels on both sides.
  EXPECT_EQ(j["torchvision_first_batch_labels"], j["first_batch_labels"]);
  EXPECT_NEAR(j["ratio"].get<double>(),
              j["images_per_s"].get<double>() / j["torchvision_images_per_s"].get<double>(),
              1e-9 * j["ratio"].get<double>());
  EXPECT_NE(j["torchvision_framework"].get<std::string>().find("torchvision"), std::string::npos);
}

TEST(BenchLoader, CompareTorchvisionOnAFolder) {
  std::string why;
  if (!python_has_torchvision(why)) GTEST_SKIP() << why;
  ScopedTempDir dir("bench-loader-tv-folder");
  write_folder(dir.path / "images");
  const auto j =
      run_json(fmt::format("--data folder:{} --workers 1 --batch 5 --size 32 --compare-torchvision",
                           dir.file("images")),
               dir.path / "run");
  ASSERT_TRUE(j.is_object());
  expect_same_images_both_sides(j, 5, 32);
  EXPECT_EQ(j["torchvision_dataset"], "ImageFolder");
}

TEST(BenchLoader, CompareTorchvisionOnShardsWithTwoWorkers) {
  std::string why;
  if (!python_has_torchvision(why)) GTEST_SKIP() << why;
  ScopedTempDir dir("bench-loader-tv-shards");
  write_folder(dir.path / "images");
  ShardWriteOptions wo;
  wo.per_shard = 5;
  write_shards(dir.file("images"), dir.file("shards/s"), wo);
  const auto j = run_json(fmt::format("--data 'shards:{}/shards/s-*.tar' --workers 2 --batch 5 "
                                      "--size 24 --compare-torchvision",
                                      dir.path.string()),
                          dir.path / "run");
  ASSERT_TRUE(j.is_object());
  expect_same_images_both_sides(j, 5, 24);
  EXPECT_EQ(j["torchvision_dataset"], "tar members (tarfile)");
}

// A file ImageFolder reads but dplab does not (.tif) would make the two sides time different
// images: the torchvision side refuses, and the command says why.
TEST(BenchLoader, CompareTorchvisionRefusesDifferentImageSets) {
  std::string why;
  if (!python_has_torchvision(why)) GTEST_SKIP() << why;
  ScopedTempDir dir("bench-loader-tv-mismatch");
  write_folder(dir.path / "images");
  std::ofstream(dir.path / "images" / "class1" / "extra.tif") << "not read by dplab";
  const auto r = run_dplab(fmt::format("bench loader --data folder:{} --workers 0 --batch 5 "
                                       "--size 8 --compare-torchvision",
                                       dir.file("images")),
                           dir.path / "run");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("do not read the same files"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dplab
