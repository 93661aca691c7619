#include "dplab/comm/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "dplab/core/error.h"

namespace dplab {

BlockQuantizer::BlockQuantizer(int bits, int64_t block, const std::string& what)
    : bits_(bits), block_(block), qmax_((1 << (bits - 1)) - 1) {
  DPLAB_CHECK(bits == 8 || bits == 4, "{}: expected 8 or 4 bits, got {}", what, bits);
  DPLAB_CHECK(block >= 1, "{}: expected a block of >= 1 elements, got {}", what, block);
}

void BlockQuantizer::encode(const float* x, int64_t n, uint8_t* out) const {
  const int64_t nb = blocks(n);
  uint8_t* codes = out + 4 * nb;
  if (bits_ == 4) std::memset(codes, 0, size_t(code_bytes(n)));
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t lo = b * block_, hi = std::min(n, lo + block_);
    float m = 0;
    bool finite = true;
    for (int64_t j = lo; j < hi; ++j) {
      const float a = std::fabs(x[j]);
      if (!std::isfinite(a)) finite = false;
      m = std::max(m, a);
    }
    // A non-finite block: scale NaN, codes 0, decoded as NaN (see the header).
    float s = !finite ? std::numeric_limits<float>::quiet_NaN() : m / float(qmax_);
    std::memcpy(out + 4 * b, &s, 4);
    for (int64_t j = lo; j < hi; ++j) {
      int c = 0;
      if (finite && s > 0) {
        // x / s is within one rounding of [−q, q]; the clamp only catches that rounding.
        c = int(std::round(x[j] / s));
        c = std::clamp(c, -qmax_, qmax_);
      }
      if (bits_ == 8)
        codes[j] = uint8_t(int8_t(c));
      else
        codes[j / 2] |= uint8_t((uint8_t(c) & 0xF) << (4 * (j % 2)));
    }
  }
}

float BlockQuantizer::scale(const uint8_t* in, int64_t j) const {
  float s;
  std::memcpy(&s, in + 4 * (j / block_), 4);
  return s;
}

int BlockQuantizer::code(const uint8_t* in, int64_t n, int64_t j) const {
  const uint8_t* codes = in + 4 * blocks(n);
  if (bits_ == 8) return int(int8_t(codes[j]));
  const int v = (codes[j / 2] >> (4 * (j % 2))) & 0xF;
  return v >= 8 ? v - 16 : v;  // 4-bit two's complement
}

void BlockQuantizer::decode_add(const uint8_t* in, int64_t n, float* acc) const {
  const int64_t nb = blocks(n);
  for (int64_t b = 0; b < nb; ++b) {
    float s;
    std::memcpy(&s, in + 4 * b, 4);
    const int64_t lo = b * block_, hi = std::min(n, lo + block_);
    for (int64_t j = lo; j < hi; ++j) acc[j] += float(code(in, n, j)) * s;
  }
}

}  // namespace dplab
