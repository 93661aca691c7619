// The block quantiser (comm/quantize.h) against hand values: scales that are powers of two make
// every code and decoded value exact, so the expected bytes are written out here; then the
// round-trip bound |x − x̂| ≤ s/2 + 2^−22 m (the header's argument) on random blocks of very
// different magnitudes, and non-finite blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "dplab/comm/quantize.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

std::vector<uint8_t> encode(const BlockQuantizer& q, const std::vector<float>& x) {
  std::vector<uint8_t> out(size_t(q.packed_bytes(int64_t(x.size()))), 0xAA);
  q.encode(x.data(), int64_t(x.size()), out.data());
  return out;
}

std::vector<float> decode(const BlockQuantizer& q, const std::vector<uint8_t>& in, int64_t n) {
  std::vector<float> out(size_t(n), 0.f);
  q.decode_add(in.data(), n, out.data());
  return out;
}

float scale_at(const std::vector<uint8_t>& packed, int b) {
  float s;
  std::memcpy(&s, packed.data() + 4 * b, 4);
  return s;
}

// int8, blocks of 4: block maxima 127 · 2^−2 and 127 · 2^−9 give scales 2^−2 and 2^−9; the
// last block is all zeros (scale 0). Ties round away from zero (−63.5 -> −64, −1.5 -> −2).
TEST(BlockQuantizer, Int8HandValues) {
  const BlockQuantizer q(QuantFormat::int8, 4);
  EXPECT_EQ(q.max_value(), 127.f);
  const std::vector<float> x = {31.75f,       -15.875f,       0.1f, -0.2f,           // s = 1/4
                                0.248046875f, -0.0029296875f, 0.0f, 0.00048828125f,  // s = 2^-9
                                0.0f,         -0.0f};                                // s = 0
  const auto p = encode(q, x);
  ASSERT_EQ(p.size(), 3u * 4 + 10);  // 3 scales + 10 one-byte codes
  EXPECT_EQ(scale_at(p, 0), 0.25f);
  EXPECT_EQ(scale_at(p, 1), 1.0f / 512);
  EXPECT_EQ(scale_at(p, 2), 0.0f);
  const std::vector<uint8_t> codes(p.begin() + 12, p.end());
  // 127, −64, 0, −1 | 127, −2, 0, 0 | 0, 0 in two's complement.
  EXPECT_EQ(codes, (std::vector<uint8_t>{0x7F, 0xC0, 0x00, 0xFF, 0x7F, 0xFE, 0, 0, 0, 0}));
  for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(q.scale(p.data(), j), scale_at(p, int(j / 4)));
  EXPECT_EQ(q.code(p.data(), 10, 1), -64);
  EXPECT_EQ(decode(q, p, 10), (std::vector<float>{31.75f, -16.0f, 0.0f, -0.25f, 0.248046875f,
                                                  -2.0f / 512, 0, 0, 0, 0}));
}

// int4 (q = 7), blocks of 3, an odd count (the last byte's high nibble stays 0): scales 1/2,
// 1/8 and 5/7 (not a power of two: the decoded maximum is within the bound, not exact).
TEST(BlockQuantizer, Int4HandValuesAndNibbleLayout) {
  const BlockQuantizer q(QuantFormat::int4, 3);
  EXPECT_EQ(q.max_value(), 7.f);
  const std::vector<float> x = {3.5f, -1.25f, 0.3f, -0.875f, 0.0625f, -0.1f, 5.0f};
  const auto p = encode(q, x);
  ASSERT_EQ(p.size(), 3u * 4 + 4);  // 3 scales + 7 nibbles in 4 bytes
  EXPECT_EQ(scale_at(p, 0), 0.5f);
  EXPECT_EQ(scale_at(p, 1), 0.125f);
  EXPECT_EQ(scale_at(p, 2), 5.0f / 7.0f);
  // codes 7, −3 (−2.5 away from 0), 1 (0.6) | −7, 1 (0.5 away from 0), −1 (−0.8) | 7; element
  // 2i in the low nibble: 0xD7 = (−3, 7), 0x91 = (−7, 1), 0xF1 = (−1, 1), 0x07 = (pad, 7).
  EXPECT_EQ(std::vector<uint8_t>(p.begin() + 12, p.end()),
            (std::vector<uint8_t>{0xD7, 0x91, 0xF1, 0x07}));
  std::vector<int> codes;
  for (int64_t j = 0; j < 7; ++j) codes.push_back(q.code(p.data(), 7, j));
  EXPECT_EQ(codes, (std::vector<int>{7, -3, 1, -7, 1, -1, 7}));
  const auto d = decode(q, p, 7);
  EXPECT_EQ(std::vector<float>(d.begin(), d.end() - 1),
            (std::vector<float>{3.5f, -1.5f, 0.5f, -0.875f, 0.125f, -0.125f}));
  EXPECT_NEAR(d[6], 5.0f, 5.0 * std::ldexp(1.0, -22));
}

// decode_add adds to what is there, in f32: two payloads summed in order.
TEST(BlockQuantizer, DecodeAddAccumulates) {
  const BlockQuantizer q(QuantFormat::int8, 2);
  const auto a = encode(q, {1.0f, -0.25f}), b = encode(q, {127.0f, 1.0f});  // s = 1/127, 1
  std::vector<float> acc = {10.0f, 20.0f};
  q.decode_add(a.data(), 2, acc.data());
  q.decode_add(b.data(), 2, acc.data());
  // a: codes 127, −32 (−31.75), scale fl(1/127); b: codes 127, 1, scale 1.
  const float sa = 1.0f / 127.0f;
  EXPECT_EQ(acc[0], (10.0f + 127.0f * sa) + 127.0f);
  EXPECT_EQ(acc[1], (20.0f + -32.0f * sa) + 1.0f);
}

// The round trip on random blocks whose magnitudes span 10^−6 .. 10^3: every element within
// s/2 + 2^−22 m of its input, every code within ±q, each block's maximum at ±q, and the bound
// nearly reached (the test would see a quantiser that kept more or fewer levels).
TEST(BlockQuantizer, RoundTripErrorIsAtMostHalfAStep) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> expo(-6.f, 3.f);
  for (QuantFormat f : {QuantFormat::int8, QuantFormat::int4}) {
    const int bits = f == QuantFormat::int8 ? 8 : 4;
    for (int64_t block : {int64_t(1), int64_t(7), int64_t(64), int64_t(256)}) {
      const BlockQuantizer q(f, block);
      const int64_t n = 1001;
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t b = 0; b * block < n; ++b) {
        const float mag = std::pow(10.f, expo(gen));
        for (int64_t j = b * block; j < std::min(n, (b + 1) * block); ++j)
          x[size_t(j)] = mag * normal(gen);
      }
      const auto p = encode(q, x);
      const auto d = decode(q, p, n);
      double worst = 0;  // max |x − x̂| / s over elements of blocks with s > 0
      for (int64_t b = 0; b * block < n; ++b) {
        const int64_t lo = b * block, hi = std::min(n, lo + block);
        float m = 0;
        for (int64_t j = lo; j < hi; ++j) m = std::max(m, std::fabs(x[size_t(j)]));
        const float s = scale_at(p, int(b));
        EXPECT_EQ(s, m / q.max_value());
        bool reached = false;
        for (int64_t j = lo; j < hi; ++j) {
          const int c = q.code(p.data(), n, j);
          ASSERT_LE(std::abs(c), int(q.max_value()));
          if (std::fabs(x[size_t(j)]) == m) reached = reached || std::abs(c) == int(q.max_value());
          const double err = std::fabs(double(x[size_t(j)]) - double(d[size_t(j)]));
          ASSERT_LE(err, s / 2.0 + std::ldexp(double(m), -22))
              << "bits " << bits << " block " << block << " element " << j;
          if (s > 0) worst = std::max(worst, err / s);
        }
        EXPECT_TRUE(reached) << "bits " << bits << " block " << block << " block index " << b;
      }
      if (block > 1) {
        EXPECT_GT(worst, 0.45) << "bits " << bits << " block " << block;
      }
    }
  }
}

// A block with NaN or inf decodes to NaN (every element of it); the other blocks are untouched.
TEST(BlockQuantizer, NonFiniteBlocksDecodeToNaN) {
  for (QuantFormat f :
       {QuantFormat::int4, QuantFormat::int8, QuantFormat::fp8_e4m3, QuantFormat::fp4_e2m1}) {
    const BlockQuantizer q(f, 2);
    const std::vector<float> x = {1.0f, std::nanf(""), 3.5f, -1.0f, INFINITY, 0.0f};
    const auto d = decode(q, encode(q, x), 6);
    EXPECT_TRUE(std::isnan(d[0]) && std::isnan(d[1])) << quant_format_name(f);
    EXPECT_EQ(d[2], 3.5f) << quant_format_name(f);  // the block's maximum is exact in each
    EXPECT_TRUE(std::isnan(d[4]) && std::isnan(d[5])) << quant_format_name(f);
  }
}

TEST(BlockQuantizer, RejectsBadFormatsAndBlock) {
  EXPECT_THROW(parse_quant_format("int5", "streaming_diloco.quantize"), Error);
  EXPECT_THROW(parse_quant_format("fp4", "streaming_diloco.quantize"), Error);
  EXPECT_EQ(parse_quant_format("fp4_e2m1", "q"), QuantFormat::fp4_e2m1);
  EXPECT_THROW(BlockQuantizer(QuantFormat::int8, 0, "streaming_diloco.quantize_block"), Error);
}

// ---- the float formats ---------------------------------------------------------------------

// Reference encoders written from the formats' definitions, independently of the quantiser's
// code table: a positive y in binade [2^e, 2^(e+1)) with e >= the smallest normal exponent emin
// has spacing 2^(e − mantissa bits); below 2^emin the subnormal spacing 2^(emin − mantissa bits)
// holds. The value is the nearest multiple of the spacing, ties to even (nearbyint in the
// default rounding mode), then clamped at the largest value. Returns the value, not the code.
float ref_float(float y, int mbits, int emin, float vmax) {
  const float a = std::fabs(y);
  if (a == 0) return 0.f;
  const int e = std::max(std::ilogb(a), emin);
  const float step = std::ldexp(1.f, e - mbits);
  float v = std::nearbyint(a / step) * step;  // a / step: a power-of-two division, exact
  v = std::min(v, vmax);
  return std::signbit(y) ? -v : v;
}
float ref_e4m3(float y) {
  return ref_float(y, 3, -6, 448.f);
}
float ref_e2m1(float y) {
  return ref_float(y, 1, 0, 6.f);
}

// fp8 e4m3, blocks of 4. Block 0: max 28, s = 28/448 = 1/16 exactly, y = 16 x:
//   28 -> y 448 = 1.75 · 2^8: 0.1111.110 = 0x7E; −1 -> y −16 = 2^4: 1.1011.000 = 0xD8;
//   1.0625 -> y 17, spacing 2 in [16, 32): 8.5 steps, a tie, to the even 16: 0x58;
//   2^−12 -> y 2^−8, subnormal (below 2^−6), 2 · 2^−9: 0.0000.010 = 0x02.
// Block 1: max 448, s = 1: 248 in [128, 256) spacing 16: 15.5 steps, a tie, to the even 256 =
//   2^8: 0.1111.000 = 0x78; −2^−10: half the smallest subnormal, a tie, to the even 0 (no sign
//   on a zero code): 0x00; 3 · 2^−11 = 0.75 · 2^−9: up to 2^−9: 0x01.
TEST(BlockQuantizer, Fp8E4m3HandValues) {
  const BlockQuantizer q(QuantFormat::fp8_e4m3, 4);
  EXPECT_EQ(q.max_value(), 448.f);
  const std::vector<float> x = {28.f,
                                -1.f,
                                1.0625f,
                                std::ldexp(1.f, -12),
                                448.f,
                                248.f,
                                -std::ldexp(1.f, -10),
                                3 * std::ldexp(1.f, -11)};
  const auto p = encode(q, x);
  ASSERT_EQ(p.size(), 2u * 4 + 8);
  EXPECT_EQ(scale_at(p, 0), 0.0625f);
  EXPECT_EQ(scale_at(p, 1), 1.f);
  EXPECT_EQ(std::vector<uint8_t>(p.begin() + 8, p.end()),
            (std::vector<uint8_t>{0x7E, 0xD8, 0x58, 0x02, 0x7E, 0x78, 0x00, 0x01}));
  EXPECT_EQ(decode(q, p, 8), (std::vector<float>{28.f, -1.f, 1.f, std::ldexp(1.f, -12), 448.f,
                                                 256.f, 0.f, std::ldexp(1.f, -9)}));
  EXPECT_EQ(q.code(p.data(), 8, 1), 0xD8);
  EXPECT_EQ(q.code_value(0xD8), -16.f);
}

// fp4 e2m1 (magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 = codes 0..7, sign in bit 3), blocks of 4, 9
// values (odd: the last high nibble is 0).
//   Block 0: max 6, s = 1: 6 -> 7; −2.5, a tie of 2 (code 4) and 3 (code 5), to the even code 4,
//     negative: 0xC; 0.25, a tie of 0 and 0.5, to 0; 5, a tie of 4 (6) and 6 (7), to 4: code 6.
//   Block 1: max 3, s = 1/2, y = 2x: 6 -> 7; 2.6 -> 3 (5); −1.6 -> −1.5 (0xB); 0.2 -> 0.
//   Block 2: −1 alone: s = fl(1/6), y = −1/s within an ulp of −6: saturates at −6 (0xF).
TEST(BlockQuantizer, Fp4E2m1HandValuesAndNibbleLayout) {
  const BlockQuantizer q(QuantFormat::fp4_e2m1, 4);
  EXPECT_EQ(q.max_value(), 6.f);
  const std::vector<float> x = {6.f, -2.5f, 0.25f, 5.f, 3.f, 1.3f, -0.8f, 0.1f, -1.f};
  const auto p = encode(q, x);
  ASSERT_EQ(p.size(), 3u * 4 + 5);
  EXPECT_EQ(scale_at(p, 0), 1.f);
  EXPECT_EQ(scale_at(p, 1), 0.5f);
  EXPECT_EQ(scale_at(p, 2), 1.f / 6.f);
  EXPECT_EQ(std::vector<uint8_t>(p.begin() + 12, p.end()),
            (std::vector<uint8_t>{0xC7, 0x60, 0x57, 0x0B, 0x0F}));
  const auto d = decode(q, p, 9);
  EXPECT_EQ(std::vector<float>(d.begin(), d.end() - 1),
            (std::vector<float>{6.f, -2.f, 0.f, 4.f, 3.f, 1.5f, -0.75f, 0.f}));
  EXPECT_EQ(d[8], -6.f * (1.f / 6.f));
}

// Random blocks of very different magnitudes: every decoded value equals the reference
// encoder's value times the block's scale, and the block's maximum is the format's largest.
TEST(BlockQuantizer, FloatFormatsMatchTheReferenceEncoders) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> expo(-6.f, 3.f);
  for (QuantFormat f : {QuantFormat::fp8_e4m3, QuantFormat::fp4_e2m1}) {
    auto ref = f == QuantFormat::fp8_e4m3 ? ref_e4m3 : ref_e2m1;
    const float vmax = f == QuantFormat::fp8_e4m3 ? 448.f : 6.f;
    for (int64_t block : {int64_t(1), int64_t(5), int64_t(256)}) {
      const BlockQuantizer q(f, block);
      const int64_t n = 1001;
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t b = 0; b * block < n; ++b) {
        const float mag = std::pow(10.f, expo(gen));
        for (int64_t j = b * block; j < std::min(n, (b + 1) * block); ++j)
          x[size_t(j)] = mag * normal(gen);
      }
      const auto p = encode(q, x);
      const auto d = decode(q, p, n);
      int64_t nonzero = 0;
      for (int64_t b = 0; b * block < n; ++b) {
        const int64_t lo = b * block, hi = std::min(n, lo + block);
        float m = 0;
        for (int64_t j = lo; j < hi; ++j) m = std::max(m, std::fabs(x[size_t(j)]));
        const float s = m / vmax;
        ASSERT_EQ(scale_at(p, int(b)), s);
        for (int64_t j = lo; j < hi; ++j) {
          const float want = ref(x[size_t(j)] / s) * s;
          ASSERT_EQ(d[size_t(j)], want) << quant_format_name(f) << " block " << block << " j " << j;
          if (std::fabs(x[size_t(j)]) == m) {
            ASSERT_EQ(std::fabs(d[size_t(j)]), vmax * s);
          }
          nonzero += d[size_t(j)] != 0;
        }
      }
      EXPECT_GT(nonzero, n / 2) << quant_format_name(f);
    }
  }
}

}  // namespace
}  // namespace dplab
