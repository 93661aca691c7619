// IDX files as untrusted input (issue #16): a 1 MB .gz inflated to 2.1 GB before it was
// rejected, and a label out of range was reported against the images file. Now the header is
// checked against a bound before any data is allocated, no more than the header declares is
// inflated (plus a bounded probe for extra bytes), and label errors name the labels file.
#include <gtest/gtest.h>

#include <zlib.h>
#include "common/harness.h"

#include <fstream>

#include "dplab/core/error.h"
#include "dplab/data/idx.h"
#include "dplab/data/mnist.h"
#include "temp_dir.h"

namespace dplab {
namespace {

using test::error_of;

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

std::vector<uint8_t> idx_images(uint32_t count, uint32_t rows, uint32_t cols, size_t data) {
  std::vector<uint8_t> b;
  put_be32(b, 0x803);
  put_be32(b, count);
  put_be32(b, rows);
  put_be32(b, cols);
  b.resize(b.size() + data, 3);
  return b;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, uLong(in.size())));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = uInt(in.size());
  zs.next_out = out.data();
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(IdxLimits, DeclaredSizeIsBoundedBeforeReading) {
  // 3 images of 32768 x 32768: 3 GiB declared by 16 bytes.
  const auto big = idx_images(3, 32768, 32768, 0);
  std::string msg = error_of([&] { parse_idx_images(big.data(), big.size(), "big-idx3"); });
  EXPECT_HAS(msg,
             "big-idx3: the IDX header declares image data of 3 x 32768 x 32768 = "
             "3221225472 bytes, more than the limit of 1073741824");
  // The bound is a parameter: 24 bytes pass at 24, not at 23.
  const auto small = idx_images(3, 2, 4, 24);
  EXPECT_EQ(parse_idx_images(small.data(), small.size(), "s", 24).pixels.size(), 24u);
  msg = error_of([&] { parse_idx_images(small.data(), small.size(), "s", 23); });
  EXPECT_HAS(msg, "declares image data of 3 x 2 x 4 = 24 bytes, more than the limit of 23");
  // Gzip makes no difference to the check.
  const auto gz = gzip(big);
  EXPECT_HAS(error_of([&] { parse_idx_images(gz.data(), gz.size(), "big.gz"); }),
             "more than the limit");
  // Empty image dimensions are damage, not zero-sized images.
  const auto flat = idx_images(5, 0, 28, 0);
  EXPECT_HAS(error_of([&] { parse_idx_images(flat.data(), flat.size(), "flat"); }),
             "flat: IDX dimension 1 (byte offset 8) is 0");
}

TEST(IdxLimits, GzipIsInflatedNoFurtherThanTheHeaderDeclares) {
  // 24 declared bytes followed by 8 MB: the stream is then cut short, so reading all of it
  // would end in "truncated gzip stream"; stopping after the header's data plus a bounded probe
  // reports the size mismatch instead.
  const auto bomb = gzip(idx_images(3, 2, 4, 24 + (size_t(8) << 20)));
  const std::vector<uint8_t> cut(bomb.begin(), bomb.begin() + long(bomb.size() * 9 / 10));
  const std::string msg = error_of([&] { parse_idx_images(cut.data(), cut.size(), "bomb.gz"); });
  EXPECT_HAS(msg,
             "bomb.gz: size mismatch: the header promises 24 bytes of image data, the file "
             "has more than 1048576 extra bytes after offset 40 (not read further)");
  // A few extra bytes are counted exactly, gzip or not.
  const auto extra = gzip(idx_images(3, 2, 4, 30));
  EXPECT_HAS(error_of([&] { parse_idx_images(extra.data(), extra.size(), "x.gz"); }),
             "the file has 30 (6 extra bytes after offset 40)");
  // Two gzip members read as one stream (as gzip -d does), and junk after a member is damage.
  const auto whole = idx_images(3, 2, 4, 24);
  auto two = gzip(std::vector<uint8_t>(whole.begin(), whole.begin() + 20));
  const auto rest = gzip(std::vector<uint8_t>(20, 3));
  two.insert(two.end(), rest.begin(), rest.end());
  EXPECT_EQ(parse_idx_images(two.data(), two.size(), "two.gz").pixels, std::vector<uint8_t>(24, 3));
  auto junk = gzip(idx_images(3, 2, 4, 24));
  junk.insert(junk.end(), {'j', 'u', 'n', 'k'});
  EXPECT_HAS(error_of([&] { parse_idx_images(junk.data(), junk.size(), "junk.gz"); }),
             fmt::format("junk.gz: data after the end of the gzip stream at compressed byte {} is "
                         "not gzip",
                         junk.size() - 4));
}

TEST(IdxLimits, LabelRangeErrorsNameTheLabelsFile) {
  test::ScopedTempDir dir("idx-labels");
  IdxImages img{3, 28, 28, std::vector<uint8_t>(3 * 784, 0)};
  write_idx_images(dir.file("train-images-idx3-ubyte.gz"), img);
  write_idx_labels(dir.file("train-labels-idx1-ubyte.gz"), {1, 10, 2});
  const std::string msg = error_of([&] { load_mnist(dir.path.string(), "train"); });
  EXPECT_HAS(msg, dir.file("train-labels-idx1-ubyte.gz") +
                      ": label 10 at byte offset 9 (sample 1) is out of range: expected 0 to 9");
  EXPECT_EQ(msg.find("images"), std::string::npos) << msg;
  // With more classes allowed, the same files load.
  EXPECT_EQ(load_mnist(dir.path.string(), "train", 0, 11)->num_classes(), 11);
}

}  // namespace
}  // namespace dplab
