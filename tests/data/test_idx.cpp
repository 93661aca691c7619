// IDX reader/writer: round trips (gzip and raw) and every error case, each naming the file.
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

using test::ScopedTempDir;

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

void write_raw(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

void write_gz(const std::string& path, const std::vector<uint8_t>& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, b.data(), unsigned(b.size())), int(b.size()));
  gzclose(f);
}

// A hand-made image file: 3 images of 2x4 with pixel value 10*i + j.
std::vector<uint8_t> image_bytes(uint32_t magic = 0x803, uint32_t count = 3, size_t data = 24) {
  std::vector<uint8_t> b;
  put_be32(b, magic);
  put_be32(b, count);
  put_be32(b, 2);
  put_be32(b, 4);
  for (size_t i = 0; i < data; ++i) b.push_back(uint8_t(10 * (i / 8) + i % 8));
  return b;
}

TEST(Idx, ReadsRawAndGzipImagesAlike) {
  ScopedTempDir dir("idx-read");
  write_raw(dir.file("raw"), image_bytes());
  write_gz(dir.file("gz"), image_bytes());  // no .gz suffix: detection is by magic
  for (const char* name : {"raw", "gz"}) {
    IdxImages img = read_idx_images(dir.file(name));
    EXPECT_EQ(img.count, 3);
    EXPECT_EQ(img.rows, 2);
    EXPECT_EQ(img.cols, 4);
    ASSERT_EQ(img.pixels.size(), 24u);
    EXPECT_EQ(img.pixels[0], 0);
    EXPECT_EQ(img.pixels[9], 11);   // image 1, pixel 1
    EXPECT_EQ(img.pixels[23], 27);  // image 2, pixel 7
  }
}

TEST(Idx, WriterRoundTripsAndIsDeterministic) {
  ScopedTempDir dir("idx-write");
  IdxImages img{2, 28, 28, std::vector<uint8_t>(2 * 784)};
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i * 7);
  std::vector<uint8_t> labels{3, 9};
  write_idx_images(dir.file("a.gz"), img, true);
  write_idx_images(dir.file("b.gz"), img, true);
  write_idx_images(dir.file("raw"), img, false);
  write_idx_labels(dir.file("l.gz"), labels, true);
  EXPECT_EQ(read_idx_images(dir.file("a.gz")).pixels, img.pixels);
  EXPECT_EQ(read_idx_images(dir.file("raw")).pixels, img.pixels);
  EXPECT_EQ(read_idx_labels(dir.file("l.gz")), labels);
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(dir.file("a.gz")), bytes(dir.file("b.gz")));
  auto raw = bytes(dir.file("raw"));
  ASSERT_EQ(raw.size(), 16u + 2 * 784);
  EXPECT_EQ(uint8_t(raw[2]), 0x08);
  EXPECT_EQ(uint8_t(raw[3]), 0x03);
}

TEST(Idx, BadMagicNamesFileAndValue) {
  ScopedTempDir dir("idx-magic");
  write_raw(dir.file("bad-magic"), image_bytes(0x801));
  std::string msg = error_of([&] { read_idx_images(dir.file("bad-magic")); });
  EXPECT_NE(msg.find(dir.file("bad-magic")), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad IDX magic 0x00000801"), std::string::npos) << msg;
  // An image file read as labels is also a bad magic.
  write_raw(dir.file("images"), image_bytes());
  msg = error_of([&] { read_idx_labels(dir.file("images")); });
  EXPECT_NE(msg.find("0x00000803"), std::string::npos) << msg;
}

TEST(Idx, TruncatedDataGivesOffset) {
  ScopedTempDir dir("idx-trunc");
  write_raw(dir.file("short"), image_bytes(0x803, 3, 20));  // 4 bytes missing
  std::string msg = error_of([&] { read_idx_images(dir.file("short")); });
  EXPECT_NE(msg.find(dir.file("short")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated image data at byte offset 36"), std::string::npos) << msg;
  // Truncated header.
  write_raw(dir.file("hdr"), {0, 0, 8, 3, 0, 0});
  msg = error_of([&] { read_idx_images(dir.file("hdr")); });
  EXPECT_NE(msg.find(dir.file("hdr")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated IDX header at byte offset 6"), std::string::npos) << msg;
}

TEST(Idx, TruncatedGzipStreamIsReported) {
  ScopedTempDir dir("idx-gztrunc");
  write_gz(dir.file("full.gz"), image_bytes());
  std::ifstream in(dir.file("full.gz"), std::ios::binary);
  std::vector<uint8_t> b(std::istreambuf_iterator<char>(in), {});
  b.resize(b.size() / 2);
  write_raw(dir.file("half.gz"), b);
  std::string msg = error_of([&] { read_idx_images(dir.file("half.gz")); });
  EXPECT_NE(msg.find(dir.file("half.gz")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated gzip"), std::string::npos) << msg;
}

TEST(Idx, ExtraDataIsSizeMismatch) {
  ScopedTempDir dir("idx-extra");
  write_raw(dir.file("long"), image_bytes(0x803, 3, 30));
  std::string msg = error_of([&] { read_idx_images(dir.file("long")); });
  EXPECT_NE(msg.find(dir.file("long")), std::string::npos) << msg;
  EXPECT_NE(msg.find("size mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("6 extra bytes"), std::string::npos) << msg;
}

TEST(Idx, MissingFileNamesIt) {
  std::string msg = error_of([] { read_idx_images("/nonexistent/dplab/file"); });
  EXPECT_NE(msg.find("/nonexistent/dplab/file"), std::string::npos) << msg;
}

TEST(Mnist, LoadsDirectoryAndScalesPixels) {
  ScopedTempDir dir("mnist-load");
  IdxImages img{3, 28, 28, std::vector<uint8_t>(3 * 784, 0)};
  img.pixels[784 + 5] = 255;
  img.pixels[784 + 6] = 51;
  write_idx_images(dir.file("train-images-idx3-ubyte.gz"), img);
  write_idx_labels(dir.file("train-labels-idx1-ubyte.gz"), {1, 7, 9});
  write_idx_images(dir.file("t10k-images-idx3-ubyte"), img, false);
  write_idx_labels(dir.file("t10k-labels-idx1-ubyte"), {0, 0, 0}, false);
  EXPECT_TRUE(has_mnist_files(dir.path.string()));
  auto train = load_mnist(dir.path.string(), "train");
  ASSERT_EQ(train->size(), 3);
  EXPECT_EQ(train->sample_shape(), (Shape{1, 28, 28}));
  Sample s = train->get(1);
  EXPECT_EQ(s.label, 7);
  EXPECT_FLOAT_EQ(s.image.to_vector()[5], 1.0f);
  EXPECT_FLOAT_EQ(s.image.to_vector()[6], 0.2f);
  EXPECT_FLOAT_EQ(s.image.to_vector()[7], 0.0f);
  EXPECT_EQ(load_mnist(dir.path.string(), "train", 2)->size(), 2);
  EXPECT_EQ(load_mnist(dir.path.string(), "test")->size(), 3);
}

TEST(Mnist, ImageLabelCountMismatchNamesBothFiles) {
  ScopedTempDir dir("mnist-mismatch");
  IdxImages img{3, 28, 28, std::vector<uint8_t>(3 * 784, 0)};
  write_idx_images(dir.file("train-images-idx3-ubyte.gz"), img);
  write_idx_labels(dir.file("train-labels-idx1-ubyte.gz"), {1, 2});
  std::string msg = error_of([&] { load_mnist(dir.path.string(), "train"); });
  EXPECT_NE(msg.find("count mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz has 3 images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-labels-idx1-ubyte.gz has 2 labels"), std::string::npos) << msg;
}

TEST(Mnist, WrongImageDimsAreRejected) {
  ScopedTempDir dir("mnist-dims");
  write_idx_images(dir.file("train-images-idx3-ubyte"),
                   IdxImages{2, 2, 4, std::vector<uint8_t>(16)}, false);
  write_idx_labels(dir.file("train-labels-idx1-ubyte"), {1, 2}, false);
  std::string msg = error_of([&] { load_mnist(dir.path.string(), "train"); });
  EXPECT_NE(msg.find(dir.file("train-images-idx3-ubyte")), std::string::npos) << msg;
  EXPECT_NE(msg.find("wrong image dims 2x4"), std::string::npos) << msg;
  // An image file holding labels (1 dim) is a bad magic.
  write_idx_labels(dir.file("train-images-idx3-ubyte"), {1, 2, 3}, false);
  msg = error_of([&] { read_idx_images(dir.file("train-images-idx3-ubyte")); });
  EXPECT_NE(msg.find("bad IDX magic 0x00000801"), std::string::npos) << msg;
}

TEST(Mnist, FashionMnistFromDebianPackage) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(has_mnist_files(dir)) << "dataset-fashion-mnist is not installed";
  auto test = load_mnist(dir, "test");
  EXPECT_EQ(test->size(), 10000);
  std::vector<int> hist(10);
  for (uint8_t l : test->labels()) hist[l]++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(hist[c], 1000) << "class " << c;
}

}  // namespace
}  // namespace dplab
