// Tar metadata as untrusted input (issue #16): pax records and GNU long names are parsed within
// bounds, and every malformed one is reported with the archive, the header's offset and what was
// expected; a pax record "1 " threw std::length_error from basic_string with no file or offset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dplab/data/tar.h"
#include "temp_dir.h"

namespace dplab {
namespace {

std::vector<uint8_t> to_bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// One pax record "LEN key=value\n" with LEN counting itself.
std::string pax_record(const std::string& key, const std::string& value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) ++len;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

std::string pax_error(const std::string& body) {
  PaxFields f;
  return parse_pax_records(reinterpret_cast<const uint8_t*>(body.data()), body.size(), f);
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(TarLimits, PaxRecords) {
  PaxFields f;
  const std::string good = pax_record("mtime", "1.5") + pax_record("path", "dir/k7.jpg") +
                           pax_record("size", "12345678901");
  EXPECT_EQ(good.substr(0, 12), "13 mtime=1.5");
  EXPECT_EQ(parse_pax_records(reinterpret_cast<const uint8_t*>(good.data()), good.size(), f), "");
  EXPECT_EQ(f.path, "dir/k7.jpg");
  EXPECT_TRUE(f.has_size);
  EXPECT_EQ(f.size, 12345678901u);
  // Issue #16's record, and other impossible lengths.
  EXPECT_NE(pax_error("1 ").find("record at byte 0: length 1 is impossible"), std::string::npos)
      << pax_error("1 ");
  EXPECT_NE(pax_error("13 mtime=1.5\n40 path=x\n").find("record at byte 13: length 40"),
            std::string::npos);
  EXPECT_NE(pax_error("0 \n").find("length 0"), std::string::npos);
  EXPECT_NE(pax_error("99999999999999999999999 a=b\n").find("record at byte 0"), std::string::npos);
  EXPECT_NE(pax_error("x path=a\n").find("expected 'LENGTH key=value"), std::string::npos);
  EXPECT_NE(pax_error("9 path=ab").find("length 9"), std::string::npos);
  EXPECT_NE(pax_error("9 path=abX").find("does not end in a newline"), std::string::npos);
  EXPECT_NE(pax_error("6 =ab\n").find("no key"), std::string::npos);
  EXPECT_NE(pax_error(pax_record("path", std::string("a\0b", 3))).find("no NUL"),
            std::string::npos);
  EXPECT_NE(pax_error(pax_record("path", std::string(5000, 'p'))).find("expected 1 to 4096"),
            std::string::npos);
  EXPECT_NE(pax_error(pax_record("size", "-5")).find("size '-5'"), std::string::npos);
  EXPECT_EQ(pax_error(pax_record("path", "a") + std::string(20, '\0')), "");  // NUL padding
}

TEST(TarLimits, PaxPathAndSizeApplyToTheNextMember) {
  test::ScopedTempDir dir("tarpax");
  const std::string path = dir.file("p.tar");
  const std::string long_name = std::string(150, 'd') + "/" + std::string(150, 'f') + ".jpg";
  {
    TarWriter w(path);
    w.add("a.cls", to_bytes("1"));
    w.add("PaxHeaders/x", to_bytes(pax_record("path", long_name) + pax_record("size", "700")), 'x');
    w.add("short.jpg", std::vector<uint8_t>(700, 5));
    w.add("b.cls", to_bytes("2"));
  }
  // The member's own header now says 0 bytes: the pax size must win (as for >= 8 GiB members).
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const size_t hdr = 512 * 4;  // a.cls header + data, pax header + data
    std::vector<char> b(512);
    f.seekg(long(hdr));
    f.read(b.data(), 512);
    std::memcpy(b.data() + 124, "00000000000", 12);
    std::memset(b.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (char c : b) sum += uint8_t(c);
    std::snprintf(b.data() + 148, 8, "%06o", sum);
    b[155] = ' ';
    f.seekp(long(hdr));
    f.write(b.data(), 512);
  }
  const TarIndex idx = index_tar(path);
  EXPECT_EQ(idx.error, "");
  ASSERT_EQ(idx.members.size(), 3u);
  EXPECT_EQ(idx.members[1].name, long_name);
  EXPECT_EQ(idx.members[1].size, 700u);
  EXPECT_EQ(idx.members[2].name, "b.cls");
  const std::vector<uint8_t> all = read_all(path);
  const TarIndex mem = index_tar_buffer(all.data(), all.size(), "mem.tar");
  ASSERT_EQ(mem.members.size(), 3u);
  EXPECT_EQ(mem.members[1].name, long_name);
  EXPECT_EQ(mem.members[2].offset, idx.members[2].offset);
}

TEST(TarLimits, MalformedMetadataStopsTheIndexWithFileAndOffset) {
  test::ScopedTempDir dir("tarbad");
  struct Case {
    const char* name;
    std::vector<uint8_t> data;
    char type;
    const char* expect;
  };
  const Case cases[] = {
      {"pax-1-space", to_bytes("1 "), 'x',
       "pax extended header at offset 1024 (data at 1536): record at byte 0: length 1 is "
       "impossible"},
      {"pax-huge", std::vector<uint8_t>((2u << 20), 'a'), 'x',
       "pax extended header at offset 1024 holds 2097152 bytes, expected at most 1048576"},
      {"long-name-huge", std::vector<uint8_t>(5000, 'n'), 'L',
       "GNU long-name header at offset 1024 holds 5000 bytes, expected at most 4097"},
      {"long-name-empty", std::vector<uint8_t>(10, 0), 'L', "holds an empty name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file(std::string(c.name) + ".tar");
    {
      TarWriter w(path);
      w.add("first.cls", to_bytes("3"));
      w.add("meta", c.data, c.type);
      w.add("next.jpg", std::vector<uint8_t>(10, 1));
    }
    const TarIndex idx = index_tar(path);
    ASSERT_EQ(idx.members.size(), 1u);  // what came before the damage
    EXPECT_EQ(idx.members[0].name, "first.cls");
    EXPECT_NE(idx.error.find(path + ": "), std::string::npos) << idx.error;
    EXPECT_NE(idx.error.find(c.expect), std::string::npos) << idx.error;
  }
}

}  // namespace
}  // namespace dplab
