// `dplab shards`'s writer (data/shard_writer.cpp) and shard names (data/shard_names.cpp): keys
// keep the source names (WebDataset: KEY.jpg + KEY.cls), bad images are left out and listed,
// --val-fraction splits each class by a fixed count, brace ranges expand like bash's, and shards
// written the old way (numbered keys, .jpeg members) still read. Members are read back with the
// tar reader; expected names and counts are written out by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/shards.h"
#include "dplab/data/tar.h"
#include "temp_dir.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> jpeg_bytes(int shade) {
  std::vector<uint8_t> px(24 * 20 * 3, uint8_t(shade));
  return encode_jpeg(px.data(), 24, 20, 3);
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), long(b.size()));
}

// Member name -> bytes of every shard of a set.
std::map<std::string, std::vector<uint8_t>> members(const std::vector<std::string>& shards) {
  std::map<std::string, std::vector<uint8_t>> r;
  for (const auto& path : shards) {
    const TarIndex idx = index_tar(path);
    EXPECT_EQ(idx.error, "");
    const auto all = read_whole_file(path);
    for (const auto& m : idx.members)
      r[m.name] =
          std::vector<uint8_t>(all.begin() + long(m.offset), all.begin() + long(m.offset + m.size));
  }
  return r;
}

std::string text(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

TEST(ShardWriter, KeysKeepSourceNamesJpgAndCls) {
  test::ScopedTempDir dir("shard-writer-keys");
  const fs::path in = dir.path / "in";
  write_bytes(in / "n01440764" / "n01440764_10026.JPEG", jpeg_bytes(10));
  write_bytes(in / "n01440764" / "n01440764_2.jpeg", jpeg_bytes(20));
  write_bytes(in / "n01443537" / "n01443537_7.v2.jpg", jpeg_bytes(30));
  ShardWriteOptions o;
  o.per_shard = 2;
  const ShardWriteResult r = write_shards(in.string(), dir.file("out/s"), o);
  EXPECT_EQ(r.counts, (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(r.skipped.empty());
  const auto m = members(r.shard_paths);
  std::set<std::string> names;
  for (const auto& [k, v] : m) names.insert(k);
  EXPECT_EQ(names, (std::set<std::string>{
                       "n01440764/n01440764_10026.jpg", "n01440764/n01440764_10026.cls",
                       "n01440764/n01440764_2.jpg", "n01440764/n01440764_2.cls",
                       "n01443537/n01443537_7_v2.jpg", "n01443537/n01443537_7_v2.cls"}));
  EXPECT_EQ(text(m.at("n01440764/n01440764_10026.cls")), "0");
  EXPECT_EQ(text(m.at("n01443537/n01443537_7_v2.cls")), "1");
  EXPECT_EQ(m.at("n01440764/n01440764_2.jpg"), jpeg_bytes(20));  // bytes as is
  // The reader groups them back with their labels and keys.
  ImageTransformOptions t;
  t.size = 8;
  t.train = false;
  ShardDataset ds(r.shard_paths, t, OnError::fail);
  ASSERT_EQ(ds.size(), 3);
  std::map<std::string, int64_t> got;
  for (const auto& s : ds.samples()) got[s.key] = s.label;
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"n01440764/n01440764_10026", 0},
                                                 {"n01440764/n01440764_2", 0},
                                                 {"n01443537/n01443537_7_v2", 1}}));
}

TEST(ShardWriter, BadImagesAreReportedAndSkipped) {
  test::ScopedTempDir dir("shard-writer-bad");
  const fs::path in = dir.path / "in";
  write_bytes(in / "a" / "good.jpg", jpeg_bytes(50));
  const std::string note = "not an image\n";
  write_bytes(in / "a" / "note.jpg", std::vector<uint8_t>(note.begin(), note.end()));
  // A truncated JPEG: its header is whole, its data is not (a noisy image, so the entropy-coded
  // data is most of the file).
  std::vector<uint8_t> noise(64 * 64 * 3);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = uint8_t((i * 2654435761u) >> 13);
  auto cut = encode_jpeg(noise.data(), 64, 64, 3);
  ASSERT_GT(cut.size(), 3000u);
  cut.resize(cut.size() / 2);
  write_bytes(in / "b" / "cut.jpg", cut);
  write_bytes(in / "b" / "fine.jpg", jpeg_bytes(120));
  const ShardWriteResult r = write_shards(in.string(), dir.file("out/s"), {});
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].path, (in / "a" / "note.jpg").string());
  EXPECT_EQ(r.skipped[1].path, (in / "b" / "cut.jpg").string());
  EXPECT_EQ(r.counts, (std::vector<int64_t>{2}));
  std::set<std::string> names;
  for (const auto& [k, v] : members(r.shard_paths)) names.insert(k);
  EXPECT_EQ(names, (std::set<std::string>{"a/good.jpg", "a/good.cls", "b/fine.jpg", "b/fine.cls"}));

  // --check header: the truncated JPEG's header is fine, so only the text file is refused.
  ShardWriteOptions o;
  o.check = ShardCheck::header;
  const ShardWriteResult h = write_shards(in.string(), dir.file("out2/s"), o);
  ASSERT_EQ(h.skipped.size(), 1u);
  EXPECT_EQ(h.skipped[0].path, (in / "a" / "note.jpg").string());
}

TEST(ShardWriter, ValFractionSplitsEachClass) {
  test::ScopedTempDir dir("shard-writer-val");
  const fs::path in = dir.path / "in";
  for (int i = 0; i < 10; ++i) write_bytes(in / "a" / fmt::format("{}.jpg", i), jpeg_bytes(i));
  for (int i = 0; i < 5; ++i) write_bytes(in / "b" / fmt::format("{}.jpg", i), jpeg_bytes(100 + i));
  ShardWriteOptions o;
  o.per_shard = 4;
  o.val_fraction = 0.2;  // round(0.2 * 10) = 2 of a, round(0.2 * 5) = 1 of b
  o.seed = 3;
  const ShardWriteResult r = write_shards(in.string(), dir.file("out/ds"), o);
  EXPECT_EQ(r.counts, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(r.val_counts, (std::vector<int64_t>{3}));
  EXPECT_EQ(fs::path(r.shard_paths[0]).filename(), "ds-train-000000.tar");
  EXPECT_EQ(fs::path(r.val_shard_paths[0]).filename(), "ds-val-000000.tar");
  EXPECT_EQ(fs::path(r.index_path).filename(), "ds-train.json");
  EXPECT_EQ(fs::path(r.val_index_path).filename(), "ds-val.json");
  std::map<std::string, int> val_per_class;
  std::set<std::string> train_keys, val_keys;
  for (const auto& [k, v] : members(r.val_shard_paths))
    if (k.ends_with(".cls")) {
      ++val_per_class[text(v)];
      val_keys.insert(k);
    }
  for (const auto& [k, v] : members(r.shard_paths))
    if (k.ends_with(".cls")) train_keys.insert(k);
  EXPECT_EQ(val_per_class, (std::map<std::string, int>{{"0", 2}, {"1", 1}}));
  EXPECT_EQ(train_keys.size(), 12u);
  for (const auto& k : val_keys) EXPECT_FALSE(train_keys.count(k)) << k;  // disjoint
  // The val index lists its shards and the classes, so the reader finds the class count.
  std::ifstream f(r.val_index_path);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["total"], 3);
  EXPECT_EQ(shard_index_classes(r.val_shard_paths[0]), (std::vector<std::string>{"a", "b"}));
  // Deterministic: the same split again.
  const ShardWriteResult again = write_shards(in.string(), dir.file("again/ds"), o);
  EXPECT_EQ(read_whole_file(again.val_shard_paths[0]), read_whole_file(r.val_shard_paths[0]));
}

TEST(ShardNames, BraceRangesAndLists) {
  EXPECT_EQ(expand_braces("train-{000000..000003}.tar"),
            (std::vector<std::string>{"train-000000.tar", "train-000001.tar", "train-000002.tar",
                                      "train-000003.tar"}));
  EXPECT_EQ(expand_braces("s{8..11}"), (std::vector<std::string>{"s8", "s9", "s10", "s11"}));
  EXPECT_EQ(expand_braces("s{2..0}"), (std::vector<std::string>{"s2", "s1", "s0"}));
  EXPECT_EQ(expand_braces("{a,b}-{0..1}.tar"),
            (std::vector<std::string>{"a-0.tar", "a-1.tar", "b-0.tar", "b-1.tar"}));
  EXPECT_EQ(expand_braces("plain-*.tar"), (std::vector<std::string>{"plain-*.tar"}));
  EXPECT_THROW(expand_braces("s-{000..5"), Error);
  EXPECT_THROW(expand_braces("s-{a..z}"), Error);
  EXPECT_THROW(expand_braces("s-{0..99999999}"), Error);
}

TEST(ShardNames, ExpandGlobTakesBracesAndNamesMissingShards) {
  test::ScopedTempDir dir("shard-names");
  for (int i = 0; i < 3; ++i) std::ofstream(dir.file(fmt::format("t-{:06d}.tar", i))) << "x";
  const std::string p = dir.file("t-{000000..000002}.tar");
  EXPECT_EQ(expand_glob(p),
            (std::vector<std::string>{dir.file("t-000000.tar"), dir.file("t-000001.tar"),
                                      dir.file("t-000002.tar")}));
  EXPECT_EQ(expand_glob(dir.file("t-{000001..000002}.tar")).size(), 2u);
  try {
    expand_glob(dir.file("t-{000000..000004}.tar"));
    FAIL() << "missing shards accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 named files do not exist (first: " +
                                         dir.file("t-000003.tar")),
              std::string::npos)
        << e.what();
  }
}

TEST(ShardWriter, OldShardsWithNumberedJpegMembersStillRead) {
  test::ScopedTempDir dir("shard-old");
  {
    TarWriter w(dir.file("old-000000.tar"));
    for (int i = 0; i < 2; ++i) {
      const std::string key = fmt::format("{:08d}", i);
      w.add(key + ".jpeg", jpeg_bytes(40 * i));
      const std::string cls = std::to_string(i);
      w.add(key + ".cls", reinterpret_cast<const uint8_t*>(cls.data()), cls.size());
    }
  }
  ImageTransformOptions t;
  t.size = 8;
  t.train = false;
  ShardDataset ds(expand_glob(dir.file("old-{000000..000000}.tar")), t, OnError::fail);
  ASSERT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.samples()[1].key, "00000001");
  EXPECT_EQ(ds.label(1), 1);
  EXPECT_EQ(ds.read_encoded(0), jpeg_bytes(0));
}

}  // namespace
}  // namespace dplab
