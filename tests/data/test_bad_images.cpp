// Image decoding on hostile and unusual input (issue #16): headers claiming more pixels than the
// file holds or than data.max_image_pixels allows are refused before decoding with errors that
// name the sample, what was expected and what was found; PNG colour types through libpng, binary
// PNM through dplab's reader, BMP and GIF through stb_image; 1-pixel-wide and 1x1 images through
// both transforms. Expected pixels are worked out by hand from the bytes each test writes.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "data/decode_error.h"
#include "dplab/core/philox.h"
#include "dplab/data/decode.h"
#include "dplab/data/transforms.h"

namespace dplab {
namespace {

using test::decode_error;

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

void put_le(std::vector<uint8_t>& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

void png_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_be32(out, uint32_t(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put_be32(out, uint32_t(crc32(0, body.data(), uInt(body.size()))));
}

// A PNG with the given IHDR fields and filtered rows (each row: filter byte 0, then the samples),
// zlib-compressed here: an encoder independent of the decoder under test.
std::vector<uint8_t> make_png(uint32_t w, uint32_t h, uint8_t depth, uint8_t colour_type,
                              const std::vector<uint8_t>& rows,
                              const std::vector<uint8_t>& palette = {}) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {depth, colour_type, 0, 0, 0});
  png_chunk(out, "IHDR", ihdr);
  if (!palette.empty()) png_chunk(out, "PLTE", palette);
  uLongf n = compressBound(uLong(rows.size()));
  std::vector<uint8_t> z(n);
  EXPECT_EQ(compress(z.data(), &n, rows.data(), uLong(rows.size())), Z_OK);
  z.resize(n);
  png_chunk(out, "IDAT", z);
  png_chunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(BadImages, PngColourTypesDecodeToRgb) {
  // 8-bit greyscale, 2x1.
  auto png = make_png(2, 1, 8, 0, {0, 10, 200});
  RgbImage img = decode_image(png.data(), png.size(), "grey.png");
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{10, 10, 10, 200, 200, 200}));
  // 8-bit RGBA: alpha dropped.
  png = make_png(1, 1, 8, 6, {0, 1, 2, 3, 4});
  EXPECT_EQ(decode_image(png.data(), png.size(), "rgba.png").rgb, (std::vector<uint8_t>{1, 2, 3}));
  // Palette: indices 1, 0 into {(9, 8, 7), (50, 60, 70)}.
  png = make_png(2, 1, 8, 3, {0, 1, 0}, {9, 8, 7, 50, 60, 70});
  EXPECT_EQ(decode_image(png.data(), png.size(), "pal.png").rgb,
            (std::vector<uint8_t>{50, 60, 70, 9, 8, 7}));
  // 16-bit RGB: round(v * 255 / 65535) of 0x1234, 0xffff, 0x0080 = 18, 255, 0.
  png = make_png(1, 1, 16, 2, {0, 0x12, 0x34, 0xff, 0xff, 0x00, 0x80});
  EXPECT_EQ(decode_image(png.data(), png.size(), "16.png").rgb, (std::vector<uint8_t>{18, 255, 0}));
  // 1-bit greyscale 3x1: bits 1, 0, 1 -> 255, 0, 255.
  png = make_png(3, 1, 1, 0, {0, 0xA0});
  img = decode_image(png.data(), png.size(), "1bit.png");
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{255, 255, 255, 0, 0, 0, 255, 255, 255}));
  const ImageHeader h = read_image_header(png.data(), png.size(), "1bit.png");
  EXPECT_EQ(h.format, ImageFormat::png);
  EXPECT_EQ(h.width, 3);
  EXPECT_EQ(h.height, 1);
}

TEST(BadImages, PngSizeIsCheckedBeforeDecoding) {
  // A valid header claiming 100000 x 100000 (30 GB of RGB) with one byte of image data.
  const auto huge = make_png(100000, 100000, 8, 2, {0});
  std::string msg =
      decode_error([&] { decode_image(huge.data(), huge.size(), "shard-3.tar:00000007"); });
  EXPECT_HAS(msg, "shard-3.tar:00000007");
  EXPECT_HAS(msg, "100000x100000");
  EXPECT_HAS(msg, "data.max_image_pixels");
  EXPECT_HAS(msg, std::to_string(kDefaultMaxImagePixels));
  // The bound is the caller's: a 4x4 image passes at 16 pixels, not at 15.
  std::vector<uint8_t> rows;
  for (int y = 0; y < 4; ++y) rows.insert(rows.end(), {0, 1, 2, 3, 4});
  const auto small = make_png(4, 4, 8, 0, rows);
  EXPECT_EQ(decode_image(small.data(), small.size(), "s", 0, 0, 16).width, 4);
  msg = decode_error([&] { decode_image(small.data(), small.size(), "s", 0, 0, 15); });
  EXPECT_HAS(msg, "4x4 = 16 pixels exceeds the limit of 15");
  msg = decode_error([&] { read_image_header(small.data(), small.size(), "s", 15); });
  EXPECT_HAS(msg, "exceeds the limit of 15");
}

TEST(BadImages, DamagedPngIsAnErrorNotHalfAnImage) {
  std::vector<uint8_t> rows;
  for (int y = 0; y < 16; ++y) {
    rows.push_back(0);
    for (int x = 0; x < 16 * 3; ++x) rows.push_back(uint8_t(x * 7 + y * 13));
  }
  const auto png = make_png(16, 16, 8, 2, rows);
  ASSERT_EQ(decode_image(png.data(), png.size(), "ok.png").rgb.size(), size_t(16 * 16 * 3));
  // Cut inside the IDAT chunk: libpng runs out of data.
  for (size_t cut : {size_t(20), size_t(40), png.size() / 2, png.size() - 13}) {
    SCOPED_TRACE(cut);
    const std::string msg = decode_error([&] { decode_image(png.data(), cut, "cut.png"); });
    EXPECT_HAS(msg, "cut.png");
  }
  // A flipped byte in the compressed data: the CRC no longer matches.
  auto bad = png;
  bad[8 + 25 + 8 + 5] ^= 0x40;
  EXPECT_HAS(decode_error([&] { decode_image(bad.data(), bad.size(), "crc.png"); }), "crc.png");
}

TEST(BadImages, PnmDecodes) {
  auto p6 = bytes("P6\n# a comment\n2 1\n255\n");
  p6.insert(p6.end(), {1, 2, 3, 250, 251, 252});
  RgbImage img = decode_image(p6.data(), p6.size(), "a.ppm");
  EXPECT_EQ(img.width, 2);
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{1, 2, 3, 250, 251, 252}));
  // 16-bit greyscale, maxval 1000: 0, 500, 1000 -> 0, round(127.5) = 128, 255.
  auto p5 = bytes("P5 3 1 1000\n");
  p5.insert(p5.end(), {0, 0, 0x01, 0xF4, 0x03, 0xE8});
  img = decode_image(p5.data(), p5.size(), "b.pgm");
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{0, 0, 0, 128, 128, 128, 255, 255, 255}));
  // A sample above maxval is damage, located by its byte offset.
  p5[p5.size() - 1] = 0xE9;  // 1001
  const std::string msg = decode_error([&] { decode_image(p5.data(), p5.size(), "c.pgm"); });
  EXPECT_HAS(msg, "c.pgm: PNM sample 1001 at byte 16 exceeds maxval 1000");
  // ASCII variants are not read.
  const auto p2 = bytes("P2 1 1 255 7\n");
  EXPECT_HAS(decode_error([&] { decode_image(p2.data(), p2.size(), "d.pgm"); }), "'P2'");
}

TEST(BadImages, Pgm16BitClaimingMorePixelsThanItHolds) {
  // Issue #16: 1.2 KB of 16-bit PGM whose header claims 64 x 64 (8192 bytes of samples);
  // stb_image wrote past its buffer here.
  auto pgm = bytes("P5\n64 64\n65535\n");
  const size_t header = pgm.size();
  pgm.resize(1200, 0x7f);
  const std::string msg = decode_error([&] { decode_image(pgm.data(), pgm.size(), "x.pgm"); });
  EXPECT_HAS(msg, fmt::format("x.pgm: truncated PNM: the 64x64 16-bit greyscale raster needs 8192 "
                              "bytes after the {}-byte header, the file has {}",
                              header, 1200 - header));
}

TEST(BadImages, PgmClaiming16384SquaredIsRefused) {
  // Issue #16: accepted at 1.67 GB; 16384^2 = 2^28 pixels is four times the default bound.
  auto pgm = bytes("P5\n16384 16384\n255\n");
  pgm.resize(4096, 1);
  std::string msg = decode_error([&] { read_image_header(pgm.data(), pgm.size(), "big.pgm"); });
  EXPECT_HAS(msg, "big.pgm: PNM image of 16384x16384 = 268435456 pixels exceeds the limit");
  msg = decode_error([&] { decode_image(pgm.data(), pgm.size(), "big.pgm"); });
  EXPECT_HAS(msg, "refused before decoding");
  // Sizes that do not fit an int are impossible, not merely large.
  auto wide = bytes("P6\n9999999999 1\n255\n");
  msg = decode_error([&] { decode_image(wide.data(), wide.size(), "w.ppm", 0, 0, INT64_MAX); });
  EXPECT_HAS(msg, "impossible size 9999999999x1");
}

TEST(BadImages, BmpThroughStbImage) {
  // 2x1 24-bit BMP, bottom-up, BGR, rows padded to 4 bytes.
  std::vector<uint8_t> bmp = {'B', 'M'};
  put_le(bmp, 14 + 40 + 8, 4);
  put_le(bmp, 0, 4);
  put_le(bmp, 14 + 40, 4);
  put_le(bmp, 40, 4);  // BITMAPINFOHEADER
  put_le(bmp, 2, 4);
  put_le(bmp, 1, 4);
  put_le(bmp, 1, 2);   // planes
  put_le(bmp, 24, 2);  // bits per pixel
  put_le(bmp, 0, 4);   // BI_RGB
  put_le(bmp, 8, 4);
  for (int i = 0; i < 4; ++i) put_le(bmp, 0, 4);
  bmp.insert(bmp.end(), {30, 20, 10, 60, 50, 40, 0, 0});
  const RgbImage img = decode_image(bmp.data(), bmp.size(), "a.bmp");
  EXPECT_EQ(img.width, 2);
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(read_image_header(bmp.data(), bmp.size(), "a.bmp").format, ImageFormat::bmp);
}

TEST(BadImages, GifScreenSizeIsCheckedBeforeDecoding) {
  std::vector<uint8_t> gif = bytes("GIF89a");
  put_le(gif, 65535, 2);
  put_le(gif, 65535, 2);
  gif.insert(gif.end(), {0, 0, 0, ';'});
  const std::string msg = decode_error([&] { decode_image(gif.data(), gif.size(), "g.gif"); });
  EXPECT_HAS(msg, "g.gif: GIF image of 65535x65535");
  EXPECT_HAS(msg, "refused before decoding");
}

TEST(BadImages, UnknownFormatNamesWhatIsRead) {
  const auto junk = bytes("%PDF-1.4 not an image at all, long enough to not look like a TGA");
  const std::string msg = decode_error([&] { decode_image(junk.data(), junk.size(), "k.jpg"); });
  EXPECT_HAS(msg, "k.jpg: not a JPEG, PNG, PNM, BMP, GIF or TGA image");
  EXPECT_HAS(msg, "25 50 44 46");  // the first bytes, in hex
}

// The normalised value of an 8-bit channel value v (what resample_to_chw writes).
float normalised(int v, int c) {
  const Normalization n;
  return float(v) / (255.0f * n.std[size_t(c)]) - n.mean[size_t(c)] / n.std[size_t(c)];
}

TEST(BadImages, ResampleBoxInsideOnePixel) {
  // Issue #16: the eval crop of a 1-pixel-high image is rows 0.0625 to 0.9375, which holds no
  // pixel centre; resample_to_chw read row 1 of a 1-row image.
  RgbImage img;
  img.width = img.height = 1;
  img.rgb = {40, 120, 200};
  std::vector<float> out(3 * 4 * 4);
  resample_to_chw(img, {0.0625, 0.0625, 0.875, 0.875}, 4, 4, false, Normalization{}, out.data());
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 16; ++i)
      EXPECT_NEAR(out[size_t(c * 16 + i)], normalised(img.rgb[size_t(c)], c), 1e-6);
  // A box that lies beyond the image is an error-free clamp to the border, not a wild read.
  resample_to_chw(img, {3.5, -2.0, 0.5, 0.5}, 4, 4, true, Normalization{}, out.data());
  EXPECT_NEAR(out[0], normalised(40, 0), 1e-6);
  EXPECT_THROW(resample_to_chw(img, {0, 0, 0, 1}, 4, 4, false, Normalization{}, out.data()), Error);
}

// Every output of an image whose every pixel is `rgb` is normalised(rgb).
void expect_constant(const std::vector<float>& out, int size, const uint8_t rgb[3], float tol) {
  const size_t plane = size_t(size) * size_t(size);
  for (int c = 0; c < 3; ++c)
    for (size_t i = 0; i < plane; ++i)
      ASSERT_NEAR(out[size_t(c) * plane + i], normalised(rgb[c], c), tol) << "channel " << c;
}

TEST(BadImages, ThinAndSinglePixelImagesThroughBothTransforms) {
  // Issue #16: valid 40x1 and 1x1 PNG/JPEG images read out of bounds. Each is one colour, so
  // every output value is that colour normalised, whatever the crop.
  const uint8_t colour[3] = {200, 30, 90};
  for (const auto& [w, h] : {std::pair{1, 1}, std::pair{40, 1}, std::pair{1, 40}}) {
    std::vector<uint8_t> px;
    std::vector<uint8_t> rows;
    for (int y = 0; y < h; ++y) {
      rows.push_back(0);
      for (int x = 0; x < w; ++x) {
        rows.insert(rows.end(), colour, colour + 3);
        px.insert(px.end(), colour, colour + 3);
      }
    }
    const auto png = make_png(uint32_t(w), uint32_t(h), 8, 2, rows);
    JpegEncodeOptions jo;
    jo.subsampling = 444;
    jo.quality = 100;
    const auto jpg = encode_jpeg(px.data(), w, h, 3, jo);
    // JPEG is lossy: the reference is the decoded pixel, which the file shows as one colour.
    const RgbImage jdec = decode_image(jpg.data(), jpg.size(), "j");
    for (const bool train : {true, false}) {
      for (const auto* file : {&png, &jpg}) {
        SCOPED_TRACE(fmt::format("{}x{} {} {}", w, h, file == &png ? "png" : "jpeg",
                                 train ? "train" : "eval"));
        ImageTransformOptions t;
        t.size = 8;
        t.train = train;
        std::vector<float> out(3 * 8 * 8, 1e9f);
        for (uint64_t seed = 0; seed < 20; ++seed) {
          PhiloxStream rng(seed, 3);
          decode_and_transform(file->data(), file->size(), "thin", t, &rng, out.data());
          expect_constant(out, 8, file == &png ? colour : jdec.rgb.data(),
                          file == &png ? 1e-5f : 0.05f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dplab
