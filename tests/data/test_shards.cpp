// Shard writing and reading: bit-exact round trip, per-rank order, image folders, damaged
// samples (skip vs fail, reported with shard and key).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/loader.h"
#include "dplab/data/shards.h"
#include "dplab/data/tar.h"
#include "temp_dir.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;

// Writes a folder <root>/<class>/<i>.jpg of solid-colour 40x30 JPEGs (colour = class).
void make_folder(const fs::path& root, int classes, int per_class) {
  for (int c = 0; c < classes; ++c) {
    const fs::path d = root / fmt::format("class_{}", char('a' + c));
    fs::create_directories(d);
    for (int i = 0; i < per_class; ++i) {
      std::vector<uint8_t> px(40 * 30 * 3);
      for (size_t p = 0; p < px.size(); p += 3) {
        px[p] = uint8_t(60 * c);
        px[p + 1] = uint8_t(5 * i);
        px[p + 2] = uint8_t(5 * (p / 3 % 40));  // a horizontal ramp: crops differ
      }
      const auto jpg = encode_jpeg(px.data(), 40, 30, 3);
      std::ofstream(d / fmt::format("{}.jpg", i), std::ios::binary)
          .write(reinterpret_cast<const char*>(jpg.data()), long(jpg.size()));
    }
  }
}

ImageTransformOptions small_eval(int size) {
  ImageTransformOptions t;
  t.size = size;
  t.train = false;
  t.resize = size;
  return t;
}

TEST(Shards, WriteReadBackBitExact) {
  test::ScopedTempDir dir("shards");
  make_folder(dir.path / "in", 3, 7);
  ShardWriteOptions o;
  o.per_shard = 5;
  o.seed = 4;
  const ShardWriteResult r = write_shards((dir.path / "in").string(), dir.file("out/train"), o);
  ASSERT_EQ(r.shard_paths.size(), 5u);  // 21 images: 5 + 5 + 5 + 5 + 1
  EXPECT_EQ(r.counts, (std::vector<int64_t>{5, 5, 5, 5, 1}));
  EXPECT_EQ(fs::path(r.shard_paths[0]).filename(), "train-000000.tar");
  // The index file.
  std::ifstream in(r.index_path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["total"], 21);
  EXPECT_EQ(j["classes"], (std::vector<std::string>{"class_a", "class_b", "class_c"}));
  EXPECT_EQ(j["shards"][4]["count"], 1);

  const FolderListing listing = list_image_folder((dir.path / "in").string());
  ShardDataset ds(expand_glob(dir.file("out/train-*.tar")), small_eval(8), OnError::fail);
  ASSERT_EQ(ds.size(), 21);
  EXPECT_EQ(ds.num_classes(), 3);
  EXPECT_EQ(ds.shard_begin(), (std::vector<int64_t>{0, 5, 10, 15, 20, 21}));
  // Every source file comes back byte for byte with its label, each exactly once, shuffled.
  // (bytes as a string: GCC 12 warns, wrongly, on ordering vectors of bytes)
  const auto text = [](const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); };
  std::multiset<std::pair<std::string, int64_t>> want, got;
  for (const auto& f : listing.files) want.insert({text(read_whole_file(f.path)), f.label});
  bool shuffled = false;
  for (int64_t i = 0; i < ds.size(); ++i) {
    got.insert({text(ds.read_encoded(i)), ds.label(i)});
    shuffled = shuffled || ds.read_encoded(i) != read_whole_file(listing.files[size_t(i)].path);
    // Keys keep the source names: <class>/<file stem> (data/shards.h).
    const std::string key = ds.samples()[size_t(i)].key;
    EXPECT_TRUE(key.starts_with("class_") && key.size() == 9 && key[7] == '/') << key;
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(shuffled);
  // Same seed: identical bytes; the shards are reproducible.
  const ShardWriteResult r2 = write_shards((dir.path / "in").string(), dir.file("again/train"), o);
  for (size_t s = 0; s < r.shard_paths.size(); ++s)
    EXPECT_EQ(read_whole_file(r.shard_paths[s]), read_whole_file(r2.shard_paths[s]));

  // Decoded samples: the colour encodes the class (R = 60 * class).
  const Sample smp = ds.get(3);
  const float r_val = smp.image.data<float>()[0] * 0.229f + 0.485f;
  EXPECT_NEAR(r_val * 255, 60 * smp.label, 3);
}

TEST(Shards, StreamOrderSplitsShardsAcrossRanks) {
  const std::vector<int64_t> begin = {0, 10, 20, 30, 40, 50, 60, 65};  // 7 shards, last short
  std::vector<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    const auto a = shard_stream_order(begin, r, 3, 9, 2, 8);
    EXPECT_EQ(a, shard_stream_order(begin, r, 3, 9, 2, 8));  // deterministic
    // Two shards per rank at least, the smallest two hold 5 + 10: every rank gets 15.
    EXPECT_EQ(a.size(), 15u);
    all.insert(all.end(), a.begin(), a.end());
  }
  // Ranks are disjoint.
  std::set<int64_t> uniq(all.begin(), all.end());
  EXPECT_EQ(uniq.size(), all.size());
  // Single rank, large buffer: a permutation of everything, different per epoch.
  auto e0 = shard_stream_order(begin, 0, 1, 9, 0, 100);
  auto e1 = shard_stream_order(begin, 0, 1, 9, 1, 100);
  EXPECT_NE(e0, e1);
  std::sort(e0.begin(), e0.end());
  for (int64_t i = 0; i < 65; ++i) EXPECT_EQ(e0[size_t(i)], i);
  EXPECT_EQ(shard_stream_count(begin, 3), 15);
  EXPECT_EQ(shard_stream_count(begin, 1), 65);
  EXPECT_THROW(shard_stream_order(begin, 0, 8, 9, 0, 10), Error);
}

TEST(Shards, ImageFolderMatchesShardsAndClasses) {
  test::ScopedTempDir dir("folder");
  make_folder(dir.path, 2, 3);
  ImageFolderDataset ds(dir.path.string(), small_eval(4));
  EXPECT_EQ(ds.size(), 6);
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_EQ(ds.listing().classes, (std::vector<std::string>{"class_a", "class_b"}));
  EXPECT_EQ(ds.label(0), 0);
  EXPECT_EQ(ds.label(5), 1);
  EXPECT_EQ(ds.sample_shape(), (Shape{3, 4, 4}));
  EXPECT_THROW(ImageFolderDataset((dir.path / "nope").string(), small_eval(4)), Error);
}

TEST(Shards, DamagedSamplesAreCountedReportedSkippedOrFatal) {
  test::ScopedTempDir dir("dmg");
  const std::string path = dir.file("s-000000.tar");
  std::vector<uint8_t> px(16 * 16 * 3, 90);
  const auto good = encode_jpeg(px.data(), 16, 16, 3);
  const std::vector<uint8_t> bad(good.begin(), good.begin() + long(good.size() / 2));
  {
    TarWriter w(path);
    w.add("a.jpg", good);
    w.add("a.cls", std::vector<uint8_t>{'1'});
    w.add("b.jpg", bad);  // truncated JPEG
    w.add("b.cls", std::vector<uint8_t>{'2'});
    w.add("c.jpg", good);  // no .cls
    w.add("d.jpg", good);
    w.add("d.cls", std::vector<uint8_t>{'x'});  // not a number
    w.add("e.jpg", good);
    w.add("e.cls", std::vector<uint8_t>{'0', '\n'});
  }
  // Index time: c and d are dropped (2 errors); b is found when decoded.
  ShardDataset skip({path}, small_eval(8), OnError::skip);
  EXPECT_EQ(skip.size(), 3);
  EXPECT_EQ(skip.error_count(), 2);
  EXPECT_EQ(skip.num_classes(), 3);
  // b (index 1) is replaced by the next readable sample, e (label 0).
  std::vector<float> out(3 * 8 * 8);
  PhiloxStream rng(0, 0);
  EXPECT_EQ(skip.get_random_into(1, out.data(), rng), 0);
  EXPECT_EQ(skip.error_count(), 3);

  try {
    ShardDataset fail({path}, small_eval(8), OnError::fail);
    FAIL() << "fail mode accepted a sample without .cls";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("s-000000.tar:c"), std::string::npos) << e.what();
  }
  // A fail-mode loader over a clean index but a corrupt JPEG rethrows with shard and key.
  const std::string path2 = dir.file("t-000000.tar");
  {
    TarWriter w(path2);
    w.add("ok.jpg", good);
    w.add("ok.cls", std::vector<uint8_t>{'0'});
    w.add("broken.jpg", bad);
    w.add("broken.cls", std::vector<uint8_t>{'1'});
  }
  auto ds =
      std::make_shared<ShardDataset>(std::vector<std::string>{path2}, small_eval(8), OnError::fail);
  LoaderOptions lo;
  lo.batch_size = 2;
  lo.workers = 1;
  BatchLoader loader(ds, lo);
  loader.start_epoch({0, 1}, 0);
  Batch b;
  try {
    loader.next(b);
    FAIL() << "corrupt JPEG loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t-000000.tar:broken"), std::string::npos) << e.what();
  }
  // A truncated shard: entries before the damage are kept, the damage is counted.
  fs::resize_file(path2, 512 + 1024 + 512 + 100);
  ShardDataset cut({path2}, small_eval(8), OnError::skip);
  EXPECT_EQ(cut.size(), 1);
  EXPECT_GE(cut.error_count(), 1);
}

TEST(Shards, TrainTransformIsDeterministicPerSample) {
  test::ScopedTempDir dir("det");
  make_folder(dir.path, 2, 2);
  ImageTransformOptions t;
  t.size = 16;
  auto ds = std::make_shared<ImageFolderDataset>(dir.path.string(), t);
  LoaderOptions lo;
  lo.batch_size = 4;
  lo.seed = 3;
  BatchLoader l0(ds, lo);
  lo.workers = 2;
  BatchLoader l2(ds, lo);
  l0.start_epoch({0, 1, 2, 3}, 1);
  l2.start_epoch({0, 1, 2, 3}, 1);
  Batch a, b;
  ASSERT_TRUE(l0.next(a));
  ASSERT_TRUE(l2.next(b));
  EXPECT_EQ(a.images.to_vector(), b.images.to_vector());
  l2.start_epoch({0, 1, 2, 3}, 2);  // another epoch: other crops
  ASSERT_TRUE(l2.next(b));
  EXPECT_NE(a.images.to_vector(), b.images.to_vector());
}

}  // namespace
}  // namespace dplab
