// .cls labels as untrusted input (issue #16): a label of 5,000,000 made a 15 GB model and
// 999999999999 a negative class count. Labels are bounded by data.num_classes when given, else
// by the shard index's class list, else by kMaxClassesUnlessGiven; each violation is a damaged
// sample named by shard, key, member and offset.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "dplab/data/decode.h"
#include "dplab/data/shards.h"
#include "dplab/data/tar.h"
#include "temp_dir.h"

namespace dplab {
namespace {

std::vector<uint8_t> text(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

ImageTransformOptions eval8() {
  ImageTransformOptions t;
  t.size = 8;
  t.train = false;
  t.resize = 8;
  return t;
}

// A shard of samples k0, k1, ... with the given .cls contents; returns its path.
std::string write_shard(const test::ScopedTempDir& dir, const std::string& name,
                        const std::vector<std::string>& labels) {
  const std::vector<uint8_t> px(8 * 8 * 3, 77);
  const auto jpg = encode_jpeg(px.data(), 8, 8, 3);
  const std::string path = dir.file(name);
  TarWriter w(path);
  for (size_t i = 0; i < labels.size(); ++i) {
    w.add(fmt::format("k{}.jpg", i), jpg);
    w.add(fmt::format("k{}.cls", i), text(labels[i]));
  }
  return path;
}

// The message of the error fail mode throws for `path`.
std::string fail_message(const std::string& path, int num_classes) {
  try {
    ShardDataset ds({path}, eval8(), OnError::fail, num_classes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(ShardLabels, HugeLabelsWithoutNumClassesAreDamage) {
  test::ScopedTempDir dir("labels-huge");
  const std::string path = write_shard(dir, "s-000000.tar", {"2", "5000000", "999999999999", "0"});
  ShardDataset ds({path}, eval8(), OnError::skip);
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.error_count(), 2);
  EXPECT_EQ(ds.num_classes(), 3);  // max label 2 + 1
  EXPECT_EQ(ds.label(0), 2);
  EXPECT_EQ(ds.label(1), 0);
  // k1.cls is the 4th member; its data offset is read from the archive.
  const TarIndex idx = index_tar(path);
  const std::string msg = fail_message(path, 0);
  EXPECT_HAS(msg, fmt::format("{}:k1: member 'k1.cls' (data at offset {}): label 5000000 out of "
                              "range: expected 0 to {}",
                              path, idx.members[3].offset, kMaxClassesUnlessGiven - 1));
  EXPECT_HAS(msg, "set data.num_classes");
}

TEST(ShardLabels, NumClassesBoundsLabels) {
  test::ScopedTempDir dir("labels-n");
  const std::string path = write_shard(dir, "s-000000.tar", {"3", "4", "0"});
  ShardDataset ds({path}, eval8(), OnError::skip, 4);
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.error_count(), 1);
  EXPECT_EQ(ds.num_classes(), 4);
  EXPECT_HAS(fail_message(path, 4), "label 4 out of range: expected 0 to 3 (data.num_classes = 4)");
  // Given explicitly, a large class count is the user's choice.
  const std::string big = write_shard(dir, "b-000000.tar", {"5000000"});
  ShardDataset many({big}, eval8(), OnError::fail, 6000000);
  EXPECT_EQ(many.num_classes(), 6000000);
  EXPECT_EQ(many.label(0), 5000000);
}

TEST(ShardLabels, IndexClassListBoundsLabels) {
  test::ScopedTempDir dir("labels-index");
  const std::string path = write_shard(dir, "s-000000.tar", {"1", "2"});
  std::ofstream(dir.file("s.json"))
      << R"({"shards": [{"name": "s-000000.tar", "count": 2}], "classes": ["a", "b"]})";
  ShardDataset ds({path}, eval8(), OnError::skip);
  EXPECT_EQ(ds.size(), 1);
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_HAS(fail_message(path, 0),
             "label 2 out of range: expected 0 to 1 (the classes listed in the shard index = 2)");
}

TEST(ShardLabels, MalformedClsNamesWhatItFound) {
  test::ScopedTempDir dir("labels-bad");
  std::string path = write_shard(dir, "a-000000.tar", {"12a\x01"});
  EXPECT_HAS(fail_message(path, 0),
             fmt::format("member 'k0.cls' (data at offset {}): expected a class index (decimal "
                         "digits), found '12a\\x01'",
                         index_tar(path).members[1].offset));
  path = write_shard(dir, "b-000000.tar", {std::string(100, '1')});
  EXPECT_HAS(fail_message(path, 0), "a class index of at most 64 bytes expected, found 100");
  path = write_shard(dir, "c-000000.tar", {"-1"});
  EXPECT_HAS(fail_message(path, 0), "found '-1'");
}

}  // namespace
}  // namespace dplab
