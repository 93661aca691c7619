// Issue #38, the image decoders on hostile and unusual input: PNG chunks that claim more data
// than the file holds or more than 8 MiB (every chunk type; the error names the chunk, its
// offset and what was expected), PNG IDAT data too small for the declared pixels (refused before
// decoding), PNG text, ICC and palette chunks and Adam7 interlacing decoded to the same pixels,
// top-down BMPs (negative height), BMP and TGA rasters shorter than their header declares
// (refused), GIFs through stb_image's RGBA path, and JPEG decoding
// through libjpeg (scan limit, CMYK, truncation). Every file is written by the test
// (image_bytes.h); expected pixels come from the bytes written.
#include <gtest/gtest.h>

#include <string>

#include "data/decode_error.h"
#include "data/image_bytes.h"
#include "dplab/core/philox.h"
#include "dplab/data/decode.h"

namespace dplab {
namespace {

using test::decode_error;

using test::Bytes;

Bytes pattern(size_t n, unsigned seed) {
  Bytes v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t((i * 37 + seed * 11 + (i >> 3) * 5) & 0xff);
  return v;
}

// The 44-byte PNG of issue #38: IHDR, then a chunk header claiming 0x7ffffff0 bytes, then 3.
Bytes chunk_bomb(const char* type) {
  Bytes png = test::png_signature();
  test::png_chunk(png, "IHDR", test::png_ihdr(16, 16, 8, 2));
  test::put_be32(png, 0x7ffffff0u);
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), {'a', 'b', 'c'});
  return png;
}

TEST(HostileImages, PngChunkLongerThanTheFileIsRefusedNamingItForEveryChunkType) {
  // Ancillary (text, compressed text, ICC, EXIF), critical (PLTE, IDAT) and unknown chunks.
  for (const char* type :
       {"tEXt", "zTXt", "iTXt", "iCCP", "eXIf", "sPLT", "PLTE", "IDAT", "abCd"}) {
    SCOPED_TRACE(type);
    const Bytes png = chunk_bomb(type);
    ASSERT_EQ(png.size(), 44u);
    const std::string what = std::string("bomb-") + type + ".png";
    for (bool header_only : {true, false}) {
      const std::string msg = decode_error([&] {
        if (header_only)
          read_image_header(png.data(), png.size(), what);
        else
          decode_image(png.data(), png.size(), what);
      });
      EXPECT_HAS(msg, what);
      EXPECT_HAS(msg, std::string("chunk '") + type + "' at byte 33");
      EXPECT_HAS(msg, "declares 2147483632 bytes");
      EXPECT_HAS(msg, "only 3 bytes follow");
      EXPECT_HAS(msg, "expected the data and a 4-byte CRC inside the file");
    }
  }
}

TEST(HostileImages, PngChunkOver8MiBIsRefusedEvenWhenTheFileHoldsIt) {
  const Bytes px = pattern(4 * 4 * 3, 1);
  Bytes big(size_t(8 << 20) + 1, 'x');
  std::memcpy(big.data(), "Comment\0", 8);
  const Bytes png = test::make_png8(4, 4, 2, px, false, {}, {{"tEXt", big}});
  const std::string msg = decode_error([&] { decode_image(png.data(), png.size(), "big.png"); });
  EXPECT_HAS(msg, "chunk 'tEXt' at byte 33 declares 8388609 bytes");
  EXPECT_HAS(msg, "expected at most 8388608 for a chunk other than IDAT");
  // An IDAT of any size that fits the file is fine: one 9 MiB stored IDAT of a 2048x1536 RGB
  // image (level 0: no compression).
  const uint32_t w = 2048, h = 1536;
  Bytes raw;
  for (uint32_t y = 0; y < h; ++y) {
    raw.push_back(0);
    for (uint32_t x = 0; x < w * 3; ++x) raw.push_back(uint8_t(x + y));
  }
  Bytes big_idat = test::png_signature();
  test::png_chunk(big_idat, "IHDR", test::png_ihdr(w, h, 8, 2));
  test::png_chunk(big_idat, "IDAT", test::zlib_compress(raw, 0));
  test::png_chunk(big_idat, "IEND", {});
  ASSERT_GT(big_idat.size(), size_t(9) << 20);
  const RgbImage img = decode_image(big_idat.data(), big_idat.size(), "idat.png");
  ASSERT_EQ(img.width, int(w));
  EXPECT_EQ(img.rgb[(size_t(1000) * w + 7) * 3 + 2], uint8_t(7 * 3 + 2 + 1000));
}

TEST(HostileImages, PngDamageNamesTheChunkAndItsOffset) {
  const Bytes px = pattern(8 * 8 * 3, 2);
  Bytes png = test::make_png8(8, 8, 2, px);
  // A flipped bit in the IDAT's CRC: libpng's CRC error, located in the IDAT chunk at byte 33.
  const size_t idat_length =
      size_t(png[33]) << 24 | size_t(png[34]) << 16 | size_t(png[35]) << 8 | png[36];
  Bytes bad = png;
  bad[33 + 8 + idat_length] ^= 0x10;
  std::string msg = decode_error([&] { decode_image(bad.data(), bad.size(), "crc.png"); });
  EXPECT_HAS(msg, "crc.png: corrupt PNG (8x8)");
  EXPECT_HAS(msg, "IDAT: CRC error");
  EXPECT_HAS(msg, "in chunk 'IDAT' at byte 33");
  // A flipped bit in the compressed data: zlib's error, located the same way.
  bad = png;
  bad[33 + 8 + 4] ^= 0x10;
  msg = decode_error([&] { decode_image(bad.data(), bad.size(), "zlib.png"); });
  EXPECT_HAS(msg, "zlib.png: corrupt PNG (8x8)");
  EXPECT_HAS(msg, "in chunk 'IDAT' at byte 33");
  // A chunk type that is not letters, after IHDR: libpng's error, located at its offset.
  bad = png;
  bad[33 + 4] = '1';
  msg = decode_error([&] { read_image_header(bad.data(), bad.size(), "type.png"); });
  EXPECT_HAS(msg, "type.png: bad PNG header");
  EXPECT_HAS(msg, "in chunk '1DAT' at byte 33");
}

TEST(HostileImages, PngIdatTooSmallForTheDeclaredPixelsIsRefusedBeforeDecoding) {
  // Issue #38's 1 x 67,108,864 greyscale PNG with a few bytes of image data (it allocated 704
  // MiB: the pixels and a row-pointer array of 512 MiB): deflate cannot expand 11 bytes to 128
  // MiB of rows (at most 1032:1).
  Bytes png = test::png_signature();
  test::png_chunk(png, "IHDR", test::png_ihdr(1, 67108864, 8, 0));
  test::png_chunk(png, "IDAT", test::zlib_compress(Bytes(8, 0)));
  test::png_chunk(png, "IEND", {});
  const std::string msg = decode_error([&] { decode_image(png.data(), png.size(), "tall.png"); });
  EXPECT_HAS(msg, "tall.png: corrupt PNG (1x67108864)");
  EXPECT_HAS(msg, "IDAT chunks hold");
  EXPECT_HAS(msg, "need at least 130055");
  EXPECT_HAS(msg, "refused before decoding");
  // Its header is still readable (the size is within data.max_image_pixels).
  EXPECT_EQ(read_image_header(png.data(), png.size(), "tall.png").height, 67108864);
}

TEST(HostileImages, PngTextIccPaletteAndInterlacedDecodeToTheSamePixels) {
  const uint32_t w = 13, h = 11;  // not multiples of Adam7's 8x8 blocks
  const Bytes rgb = pattern(size_t(w) * h * 3, 3);
  const Bytes plain = test::make_png8(w, h, 2, rgb);
  const RgbImage ref = decode_image(plain.data(), plain.size(), "plain.png");
  ASSERT_EQ(ref.rgb, rgb);
  // Text, compressed text, ICC profile and an unknown ancillary chunk before the IDAT: skipped.
  Bytes text = {'C', 'o', 'm', 'm', 'e', 'n', 't', 0};
  text.resize(3000, 'y');
  Bytes iccp = {'s', 'R', 'G', 'B', 0, 0};
  const Bytes profile = test::zlib_compress(pattern(4000, 9));
  iccp.insert(iccp.end(), profile.begin(), profile.end());
  const Bytes annotated = test::make_png8(w, h, 2, rgb, false, {},
                                          {{"tEXt", text},
                                           {"iCCP", iccp},
                                           {"zTXt", {'k', 0, 0, 0x78, 0x9c, 3, 0, 0, 0, 0, 1}},
                                           {"prVt", Bytes(100, 7)}});
  EXPECT_EQ(decode_image(annotated.data(), annotated.size(), "annotated.png").rgb, rgb);
  // Adam7: seven passes read row by row into the same buffer.
  const Bytes interlaced = test::make_png8(w, h, 2, rgb, true);
  EXPECT_EQ(decode_image(interlaced.data(), interlaced.size(), "adam7.png").rgb, rgb);
  // A 200-colour palette (600 bytes of PLTE, so the first IDAT starts past byte 64).
  Bytes palette, indices(size_t(w) * h), expected;
  for (int i = 0; i < 200; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(255 - i), 9});
  for (size_t i = 0; i < indices.size(); ++i) {
    indices[i] = uint8_t((i * 7) % 200);
    expected.insert(expected.end(), {indices[i], uint8_t(255 - indices[i]), 9});
  }
  const Bytes pal = test::make_png8(w, h, 3, indices, true, palette);
  EXPECT_EQ(decode_image(pal.data(), pal.size(), "palette.png").rgb, expected);
  // tRNS is still applied to palettes (and the alpha dropped): same RGB.
  const Bytes trns = test::make_png8(w, h, 3, indices, false, palette, {{"tRNS", Bytes(200, 128)}});
  EXPECT_EQ(decode_image(trns.data(), trns.size(), "trns.png").rgb, expected);
}

TEST(HostileImages, TopDownBmpDecodesTopRowFirst) {
  const int w = 3, h = 2;
  const Bytes rgb = {10, 20, 30, 40, 50, 60, 70, 80, 90,  // top row
                     1,  2,  3,  4,  5,  6,  7,  8,  9};  // bottom row
  const Bytes bottom_up = test::make_bmp24(w, h, rgb, false);
  const Bytes top_down = test::make_bmp24(w, h, rgb, true);
  ASSERT_NE(bottom_up, top_down);
  for (const Bytes* bmp : {&bottom_up, &top_down}) {
    const ImageHeader hdr = read_image_header(bmp->data(), bmp->size(), "a.bmp");
    EXPECT_EQ(hdr.format, ImageFormat::bmp);
    EXPECT_EQ(hdr.width, 3);
    EXPECT_EQ(hdr.height, 2);
    const RgbImage img = decode_image(bmp->data(), bmp->size(), "a.bmp");
    EXPECT_EQ(img.height, 2);
    EXPECT_EQ(img.rgb, rgb);
  }
  // A height of -2^31 has no positive value: refused as impossible, never passed to stb_image.
  Bytes bad = top_down;
  bad[22] = 0;
  bad[23] = 0;
  bad[24] = 0;
  bad[25] = 0x80;
  EXPECT_HAS(decode_error([&] { decode_image(bad.data(), bad.size(), "min.bmp"); }),
             "impossible size 3x2147483648");
}

TEST(HostileImages, BmpAndTgaShorterThanTheirHeaderDeclaresAreRefused) {
  // stb_image reads zeros past the end of its input: a cut file would decode to black after
  // every pixel was allocated. The raster's length is checked before.
  const int w = 5, h = 3;
  Bytes rgb(size_t(w) * h * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 11);
  const Bytes bmp = test::make_bmp24(w, h, rgb, false);
  EXPECT_EQ(decode_image(bmp.data(), bmp.size(), "a.bmp").rgb, rgb);
  // The last row's padding may be missing; one byte of pixels less is refused.
  const size_t last_padding = size_t((w * 3 + 3) / 4 * 4 - w * 3);
  EXPECT_EQ(decode_image(bmp.data(), bmp.size() - last_padding, "a.bmp").rgb, rgb);
  const std::string msg =
      decode_error([&] { decode_image(bmp.data(), bmp.size() - last_padding - 1, "cut.bmp"); });
  EXPECT_HAS(msg,
             "cut.bmp: truncated BMP: the 5x3 raster of 24-bit pixels from byte 54 ends at "
             "byte " +
                 std::to_string(bmp.size() - last_padding));
  for (bool rle : {false, true}) {
    SCOPED_TRACE(rle);
    const Bytes tga = test::make_tga24(w, h, rgb, rle);
    const ImageHeader hdr = read_image_header(tga.data(), tga.size(), "a.tga");
    EXPECT_EQ(hdr.format, ImageFormat::tga);
    EXPECT_EQ(decode_image(tga.data(), tga.size(), "a.tga").rgb, rgb);
    if (!rle) {
      const Bytes cut(tga.begin(), tga.end() - 1);
      EXPECT_HAS(decode_error([&] { decode_image(cut.data(), cut.size(), "cut.tga"); }),
                 "cut.tga: truncated TGA: a 5x3 image of type 2 with 24-bit pixels takes at "
                 "least 63 bytes, the file has 62");
    }
  }
  // Found by fuzz_image: 52 bytes of 16-bit uncompressed TGA declaring 4112 x 4112 (it decoded,
  // to 17 Mpixel of black).
  Bytes tga = {0, 0, 2, 0x75, 0x10, 0x10, 0x10, 0x10, 0, 0, 0, 0};
  test::put_le(tga, 4112, 2);
  test::put_le(tga, 4112, 2);
  tga.insert(tga.end(), {16, 0x10});
  tga.resize(52, 0x10);
  EXPECT_HAS(decode_error([&] { decode_image(tga.data(), tga.size(), "slow.tga"); }),
             "takes at least 33817106 bytes, the file has 52; refused before decoding");
}

TEST(HostileImages, GifDecodesThroughStbImageRgba) {
  // A 3x2 frame on a 4x3 screen: the rest of the screen is black.
  const Bytes palette = {255, 0, 0, 0, 255, 0, 0, 0, 255, 250, 251, 252};
  const Bytes gif = test::make_gif(4, 3, 3, 2, {0, 1, 2, 3, 2, 1}, palette);
  const RgbImage img = decode_image(gif.data(), gif.size(), "a.gif");
  ASSERT_EQ(img.width, 4);
  ASSERT_EQ(img.height, 3);
  const Bytes expected = {255, 0,   0,   0, 255, 0,   0, 0,   255, 0, 0, 0,  // row 0
                          250, 251, 252, 0, 0,   255, 0, 255, 0,   0, 0, 0,  // row 1
                          0,   0,   0,   0, 0,   0,   0, 0,   0,   0, 0, 0};
  EXPECT_EQ(img.rgb, expected);
}

TEST(HostileImages, JpegThroughLibjpegKeepsTurboJpegsBehaviour) {
  PhiloxStream rng(5, 0);
  const int w = 40, h = 24;
  Bytes px(size_t(w) * h * 3);
  for (auto& v : px) v = uint8_t(rng.uniform(0, 255));
  // CMYK (Adobe, inverted): converted by R = C * K / 255 on the decoded values.
  Bytes flat(size_t(w) * h * 4);
  for (size_t i = 0; i < flat.size(); i += 4) {
    flat[i] = 200;
    flat[i + 1] = 100;
    flat[i + 2] = 50;
    flat[i + 3] = 128;
  }
  const Bytes cmyk = encode_jpeg(flat.data(), w, h, 4, {95, 444, false});
  ASSERT_TRUE(read_image_header(cmyk.data(), cmyk.size(), "c.jpg").cmyk);
  const RgbImage img = decode_image(cmyk.data(), cmyk.size(), "c.jpg");
  ASSERT_EQ(img.width, w);
  const int expected[3] = {(200 * 128 + 127) / 255, (100 * 128 + 127) / 255,
                           (50 * 128 + 127) / 255};
  for (size_t p = 0; p < size_t(w) * h; ++p)
    for (size_t c = 0; c < 3; ++c)
      ASSERT_NEAR(int(img.rgb[p * 3 + c]), expected[c], 2) << p << " " << c;
  // Truncated: libjpeg's warning ends the decode as an error naming the file.
  const Bytes rgb = encode_jpeg(px.data(), w, h, 3, {90, 420, true});
  const Bytes cut(rgb.begin(), rgb.begin() + long(rgb.size() * 2 / 3));
  const std::string msg = decode_error([&] { decode_image(cut.data(), cut.size(), "cut.jpg"); });
  EXPECT_HAS(msg, "cut.jpg: corrupt JPEG (40x24)");
  EXPECT_HAS(msg, "(libjpeg stopped at byte ");  // at (or one before, an 0xFF) the end
  EXPECT_HAS(msg, fmt::format(" of {})", cut.size()));
  // More than 500 scans (as TurboJPEG's TJFLAG_LIMITSCANS): the first scan (DC of every
  // component), made a valid repeatable one (successive approximation Al = 0), 501 times.
  const Bytes prog = encode_jpeg(px.data(), w, h, 3, {90, 444, true});
  size_t sos = 0;
  for (size_t i = 2; i + 1 < prog.size() && sos == 0; ++i)
    if (prog[i] == 0xFF && prog[i + 1] == 0xDA) sos = i;
  ASSERT_GT(sos, 0u);
  const size_t header_end = sos + 2 + (size_t(prog[sos + 2]) << 8 | prog[sos + 3]);
  size_t next = header_end;  // the next marker: 0xFF then neither 0x00 (stuffing) nor RSTn
  while (next + 1 < prog.size() &&
         !(prog[next] == 0xFF && prog[next + 1] != 0x00 && prog[next + 1] != 0xFF &&
           !(prog[next + 1] >= 0xD0 && prog[next + 1] <= 0xD7)))
    ++next;
  Bytes scan(prog.begin() + long(sos), prog.begin() + long(next));
  scan[header_end - sos - 1] = 0x00;  // Ah = 0, Al = 0
  Bytes ok(prog.begin(), prog.begin() + long(sos));
  ok.insert(ok.end(), scan.begin(), scan.end());
  Bytes bomb = ok;
  ok.insert(ok.end(), {0xFF, 0xD9});
  EXPECT_EQ(decode_image(ok.data(), ok.size(), "one-scan.jpg").width, w);  // a valid file
  for (int i = 1; i < 501; ++i) bomb.insert(bomb.end(), scan.begin(), scan.end());
  bomb.insert(bomb.end(), {0xFF, 0xD9});
  EXPECT_HAS(decode_error([&] { decode_image(bomb.data(), bomb.size(), "scans.jpg"); }),
             "scans.jpg: corrupt JPEG (40x24): progressive JPEG with more than 500 scans");
  bomb.resize(ok.size() - 2 + scan.size() * 499);  // 500 scans: decoded
  bomb.insert(bomb.end(), {0xFF, 0xD9});
  EXPECT_EQ(decode_image(bomb.data(), bomb.size(), "500.jpg").width, w);
}

}  // namespace
}  // namespace dplab
