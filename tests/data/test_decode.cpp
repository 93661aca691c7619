// JPEG decoding with libjpeg-turbo against stb_image's decode of the same file, DCT scaling,
// other formats, and clear errors for damaged input.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/core/philox.h"
#include "dplab/data/decode.h"

// The reference JPEG decoder: stb_image's, compiled here (the library no longer reads JPEG
// through stb_image), private to this file.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_JPEG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace dplab {
namespace {

RgbImage decode_with_stb(const uint8_t* data, size_t size, const std::string& what) {
  int w = 0, h = 0, comp = 0;
  stbi_uc* pix = stbi_load_from_memory(data, int(size), &w, &h, &comp, 3);
  EXPECT_NE(pix, nullptr) << what << ": " << stbi_failure_reason();
  RgbImage img;
  if (pix == nullptr) return img;
  img.width = w;
  img.height = h;
  img.rgb.assign(pix, pix + size_t(w) * size_t(h) * 3);
  stbi_image_free(pix);
  return img;
}

// A smooth random image (sums of low-frequency waves): what JPEG is made for.
std::vector<uint8_t> smooth_image(int w, int h, int channels, uint64_t seed) {
  PhiloxStream rng(seed, 0);
  std::vector<uint8_t> px(size_t(w * h * channels));
  for (int c = 0; c < channels; ++c) {
    const float fx = rng.uniform(0.02f, 0.15f), fy = rng.uniform(0.02f, 0.15f);
    const float ph = rng.uniform(0, 6.28f), a = rng.uniform(40, 110);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const float v = 128 + a * std::sin(fx * x + ph) * std::cos(fy * y - ph);
        px[size_t((y * w + x) * channels + c)] = uint8_t(std::clamp(v, 0.0f, 255.0f));
      }
  }
  return px;
}

int max_abs_diff(const RgbImage& a, const RgbImage& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  if (a.rgb.size() != b.rgb.size()) return 999;
  int m = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i)
    m = std::max(m, std::abs(int(a.rgb[i]) - int(b.rgb[i])));
  return m;
}

struct Case {
  const char* name;
  int channels, subsampling;
  bool progressive;
};

// Tolerance: both decoders are exact to the JPEG spec's accuracy but use different IDCTs
// (libjpeg-turbo's accurate islow vs stb's integer IDCT) and chroma upsampling filters, so
// pixels differ by a few levels; 12 (of 255) allows that and catches real mistakes (channel
// order, colour conversion, wrong scaling), which give differences of tens to hundreds.
constexpr int kTolerance = 12;

TEST(Decode, TurboMatchesStbAcrossJpegVariants) {
  const Case cases[] = {{"baseline 4:2:0", 3, 420, false}, {"baseline 4:4:4", 3, 444, false},
                        {"baseline 4:2:2", 3, 422, false}, {"progressive 4:2:0", 3, 420, true},
                        {"greyscale", 1, 0, false},        {"CMYK", 4, 444, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int w = 67, h = 45;  // not multiples of the 16-pixel MCU
    const auto px = smooth_image(w, h, c.channels, 11);
    JpegEncodeOptions o;
    o.subsampling = c.subsampling;
    o.progressive = c.progressive;
    const auto jpg = encode_jpeg(px.data(), w, h, c.channels, o);
    const RgbImage turbo = decode_image(jpg.data(), jpg.size(), c.name);
    const RgbImage stb = decode_with_stb(jpg.data(), jpg.size(), c.name);
    ASSERT_EQ(turbo.width, w);
    ASSERT_EQ(turbo.height, h);
    EXPECT_LE(max_abs_diff(turbo, stb), kTolerance);
    if (c.channels == 1) {  // greyscale comes back as R = G = B
      for (size_t i = 0; i < turbo.rgb.size(); i += 3) {
        ASSERT_EQ(turbo.rgb[i], turbo.rgb[i + 1]);
        ASSERT_EQ(turbo.rgb[i], turbo.rgb[i + 2]);
      }
    }
    if (c.channels == 3) {  // and close to the source pixels (quality 90)
      int m = 0;
      for (size_t i = 0; i < px.size(); ++i)
        m = std::max(m, std::abs(int(px[i]) - int(turbo.rgb[i])));
      EXPECT_LE(m, 24);
    }
  }
}

TEST(Decode, DctScalingPicksSmallestSizeCoveringTarget) {
  const auto px = smooth_image(512, 384, 3, 3);
  const auto jpg = encode_jpeg(px.data(), 512, 384, 3);
  // 1/2 gives 256x192 (covers 224x160); 3/8 gives 192x144 (does not).
  RgbImage img = decode_image(jpg.data(), jpg.size(), "x", 224, 160);
  EXPECT_EQ(img.width, 256);
  EXPECT_EQ(img.height, 192);
  img = decode_image(jpg.data(), jpg.size(), "x", 60, 40);  // 1/8: 64x48
  EXPECT_EQ(img.width, 64);
  EXPECT_EQ(img.height, 48);
  img = decode_image(jpg.data(), jpg.size(), "x", 500, 10);  // never upscales
  EXPECT_EQ(img.width, 512);
  // The scaled decode is a smooth downscale of the full one: compare block means at 1/2.
  const RgbImage full = decode_image(jpg.data(), jpg.size(), "x");
  const RgbImage half = decode_image(jpg.data(), jpg.size(), "x", 256, 192);
  int m = 0;
  for (int y = 0; y < 192; ++y)
    for (int x = 0; x < 256; ++x)
      for (int c = 0; c < 3; ++c) {
        int s = 0;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx)
            s += full.rgb[size_t(((2 * y + dy) * 512 + 2 * x + dx) * 3 + c)];
        m = std::max(m, std::abs(s / 4 - int(half.rgb[size_t((y * 256 + x) * 3 + c)])));
      }
  EXPECT_LE(m, 8);
}

TEST(Decode, PngThroughLibpng) {
  // A 2x1 PNG (RGB, no filter) built by hand: stored zlib block, CRCs computed here.
  const std::vector<uint8_t> png = {
      0x89, 'P',  'N',  'G',  0x0D, 0x0A, 0x1A, 0x0A,  // signature
      0,    0,    0,    13,   'I',  'H',  'D',  'R',  0,    0,    0,    2,    0,
      0,    0,    1,    8,    2,    0,    0,    0,    0x7B, 0x40, 0xE8, 0xDD,  // CRC
      0,    0,    0,    18,   'I',  'D',  'A',  'T',  0x78, 0x01, 0x01, 0x07, 0x00,
      0xF8, 0xFF, 0,    10,   20,   30,   40,   50,   60,   0x02, 0x37, 0x00, 0xD3,  // adler32
      0x00, 0x00, 0x00, 0x00,  // CRC placeholder (fixed below)
      0,    0,    0,    0,    'I',  'E',  'N',  'D',  0xAE, 0x42, 0x60, 0x82};
  std::vector<uint8_t> p = png;
  // CRC-32 of the IDAT chunk type + data.
  auto crc32 = [](const uint8_t* d, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= d[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
  };
  const size_t idat = 33;  // chunk length field
  const uint32_t crc = crc32(&p[idat + 4], 4 + 18);
  for (int i = 0; i < 4; ++i) p[idat + 8 + 18 + size_t(i)] = uint8_t(crc >> (24 - 8 * i));
  const uint32_t ihdr_crc = crc32(&p[12], 17);
  for (int i = 0; i < 4; ++i) p[29 + size_t(i)] = uint8_t(ihdr_crc >> (24 - 8 * i));
  const RgbImage img = decode_image(p.data(), p.size(), "tiny.png");
  ASSERT_EQ(img.width, 2);
  ASSERT_EQ(img.height, 1);
  EXPECT_EQ(img.rgb, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_FALSE(read_image_header(p.data(), p.size(), "tiny.png").jpeg);
}

TEST(Decode, DamagedInputGivesClearErrors) {
  const auto px = smooth_image(64, 48, 3, 5);
  auto jpg = encode_jpeg(px.data(), 64, 48, 3);
  // Truncated in the entropy-coded data.
  std::vector<uint8_t> cut(jpg.begin(), jpg.begin() + long(jpg.size() / 2));
  try {
    decode_image(cut.data(), cut.size(), "s-000001.tar:00000042");
    FAIL() << "truncated JPEG decoded";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("s-000001.tar:00000042"), std::string::npos) << e.what();
  }
  // Only the header survives.
  std::vector<uint8_t> hdr(jpg.begin(), jpg.begin() + 20);
  EXPECT_THROW(decode_image(hdr.data(), hdr.size(), "k"), DecodeError);
  // Not an image at all.
  const std::vector<uint8_t> junk = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  try {
    decode_image(junk.data(), junk.size(), "shard.tar:key7");
    FAIL() << "junk decoded";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("shard.tar:key7"), std::string::npos);
  }
  EXPECT_THROW(decode_image(junk.data(), 0, "empty"), DecodeError);
}

}  // namespace
}  // namespace dplab
