// ustar reader/writer: round trip, checksum and truncation detection.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dplab/data/tar.h"
#include "temp_dir.h"

namespace dplab {
namespace {

std::vector<uint8_t> bytes_of(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
  return v;
}

std::vector<uint8_t> read_member(const std::string& path, const TarMember& m) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  auto v = read_file_range(fd, m.offset, m.size, path);
  ::close(fd);
  return v;
}

TEST(Tar, RoundTripIsBitExact) {
  test::ScopedTempDir dir("tar");
  const std::string path = dir.file("a.tar");
  const std::string long_name =
      std::string(120, 'd').substr(0, 60) + "/" + std::string(90, 'f') + ".jpg";
  std::vector<std::pair<std::string, std::vector<uint8_t>>> items = {{"k0.jpg", bytes_of(1000, 1)},
                                                                     {"k0.cls", {'7'}},
                                                                     {"empty.txt", {}},
                                                                     {"k1.png", bytes_of(512, 3)},
                                                                     {long_name, bytes_of(513, 9)}};
  {
    TarWriter w(path);
    for (auto& [n, d] : items) w.add(n, d);
  }
  // Archive size: per member a header plus data rounded to 512, then two end blocks.
  EXPECT_EQ(std::filesystem::file_size(path), 512u * (3 + 2 + 1 + 2 + 3) + 1024u);
  const TarIndex idx = index_tar(path);
  EXPECT_EQ(idx.error, "");
  ASSERT_EQ(idx.members.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(idx.members[i].name, items[i].first);
    EXPECT_EQ(read_member(path, idx.members[i]), items[i].second);
  }
}

TEST(Tar, HeaderChecksumAndSizeFields) {
  test::ScopedTempDir dir("tarhdr");
  const std::string path = dir.file("a.tar");
  { TarWriter(path).add("x.cls", std::vector<uint8_t>{'1', '2'}); }
  std::vector<char> raw(512);
  std::ifstream(path, std::ios::binary).read(raw.data(), 512);
  const auto* b = reinterpret_cast<const uint8_t*>(raw.data());
  std::string name, why;
  uint64_t size = 0;
  char type = 0;
  ASSERT_TRUE(parse_tar_header(b, name, size, type, why)) << why;
  EXPECT_EQ(name, "x.cls");
  EXPECT_EQ(size, 2u);
  EXPECT_EQ(type, '0');
  EXPECT_EQ(std::string(raw.data() + 124, 11), "00000000002");  // size in octal
  raw[0] = 'y';  // change the name without fixing the checksum
  EXPECT_FALSE(parse_tar_header(b, name, size, type, why));
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
}

TEST(Tar, DamageIsReportedNotFatal) {
  test::ScopedTempDir dir("tardmg");
  const std::string path = dir.file("a.tar");
  {
    TarWriter w(path);
    w.add("a.jpg", bytes_of(700, 1));
    w.add("b.jpg", bytes_of(700, 2));
  }
  // Corrupt the second header's size field: checksum mismatch at offset 1536.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1536 + 124);
    f.put('7');
  }
  TarIndex idx = index_tar(path);
  ASSERT_EQ(idx.members.size(), 1u);
  EXPECT_NE(idx.error.find("offset 1536"), std::string::npos) << idx.error;
  EXPECT_NE(idx.error.find("checksum"), std::string::npos) << idx.error;

  // Truncated in the middle of the second member's data.
  const std::string cut = dir.file("cut.tar");
  {
    TarWriter w(cut);
    w.add("a.jpg", bytes_of(700, 1));
    w.add("b.jpg", bytes_of(700, 2));
  }
  std::filesystem::resize_file(cut, 1536 + 512 + 100);
  idx = index_tar(cut);
  ASSERT_EQ(idx.members.size(), 1u);
  EXPECT_NE(idx.error.find("'b.jpg'"), std::string::npos) << idx.error;
  EXPECT_NE(idx.error.find("truncated"), std::string::npos) << idx.error;

  EXPECT_THROW(index_tar(dir.file("missing.tar")), TarError);
}

}  // namespace
}  // namespace dplab
