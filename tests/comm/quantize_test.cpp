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
  const BlockQuantizer q(8, 4);
  EXPECT_EQ(q.qmax(), 127);
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
  const BlockQuantizer q(4, 3);
  EXPECT_EQ(q.qmax(), 7);
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
  const BlockQuantizer q(8, 2);
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
  for (int bits : {8, 4}) {
    for (int64_t block : {int64_t(1), int64_t(7), int64_t(64), int64_t(256)}) {
      const BlockQuantizer q(bits, block);
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
        EXPECT_EQ(s, m / float(q.qmax()));
        bool reached = false;
        for (int64_t j = lo; j < hi; ++j) {
          const int c = q.code(p.data(), n, j);
          ASSERT_LE(std::abs(c), q.qmax());
          if (std::fabs(x[size_t(j)]) == m) reached = reached || std::abs(c) == q.qmax();
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
  const BlockQuantizer q(4, 2);
  const std::vector<float> x = {1.0f, std::nanf(""), 3.5f, -1.0f, INFINITY, 0.0f};
  const auto d = decode(q, encode(q, x), 6);
  EXPECT_TRUE(std::isnan(d[0]) && std::isnan(d[1]));
  EXPECT_EQ(d[2], 3.5f);
  EXPECT_EQ(d[3], -1.0f);
  EXPECT_TRUE(std::isnan(d[4]) && std::isnan(d[5]));
}

TEST(BlockQuantizer, RejectsBadBitsAndBlock) {
  EXPECT_THROW(BlockQuantizer(5, 16, "streaming_diloco.quantize"), Error);
  EXPECT_THROW(BlockQuantizer(8, 0, "streaming_diloco.quantize_block"), Error);
}

}  // namespace
}  // namespace dplab
