#include "dplab/comm/quantize.h"
#include "dplab/core/usage_error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "dplab/core/error.h"

namespace dplab {

QuantFormat parse_quant_format(const std::string& name, const std::string& what) {
  if (name == "int8") return QuantFormat::int8;
  if (name == "int4") return QuantFormat::int4;
  if (name == "fp8_e4m3") return QuantFormat::fp8_e4m3;
  if (name == "fp4_e2m1") return QuantFormat::fp4_e2m1;
  DPLAB_FAIL_OPTION("option {}: expected int8, int4, fp8_e4m3 or fp4_e2m1, got '{}'", what, name);
}

const char* quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::int8:
      return "int8";
    case QuantFormat::int4:
      return "int4";
    case QuantFormat::fp8_e4m3:
      return "fp8_e4m3";
    case QuantFormat::fp4_e2m1:
      return "fp4_e2m1";
  }
  return "?";
}

namespace {
// Magnitudes of the unsigned codes of a float format with `e` exponent and `m` mantissa bits
// (bias 2^(e−1) − 1): code k = (exponent field E, mantissa field F); E = 0 is subnormal,
// F · 2^(1 − bias − m); otherwise (1 + F / 2^m) · 2^(E − bias). Exact in f32 (ldexp).
std::vector<float> float_magnitudes(int e, int m) {
  const int bias = (1 << (e - 1)) - 1;
  std::vector<float> v;
  for (int k = 0; k < (1 << (e + m)); ++k) {
    const int E = k >> m, F = k & ((1 << m) - 1);
    v.push_back(E == 0 ? std::ldexp(float(F), 1 - bias - m)
                       : std::ldexp(float((1 << m) + F), E - bias - m));
  }
  return v;
}
}  // namespace

BlockQuantizer::BlockQuantizer(QuantFormat format, int64_t block, const std::string& what)
    : format_(format), block_(block) {
  DPLAB_CHECK_OPTION(block >= 1, "option {}: expected an integer >= 1, got {}", what, block);
  switch (format) {
    case QuantFormat::int8:
      bits_ = 8, max_value_ = 127;
      break;
    case QuantFormat::int4:
      bits_ = 4, max_value_ = 7;
      break;
    case QuantFormat::fp8_e4m3:
      // S.1111.111 is NaN in the fn variant: the last usable magnitude is code 126 = 448.
      bits_ = 8, magnitudes_ = float_magnitudes(4, 3), top_code_ = 126;
      break;
    case QuantFormat::fp4_e2m1:
      bits_ = 4, magnitudes_ = float_magnitudes(2, 1), top_code_ = 7;
      break;
  }
  if (is_float()) {
    max_value_ = magnitudes_[size_t(top_code_)];
    const int sign = 1 << (bits_ - 1);
    values_.assign(size_t(1) << bits_, 0.f);
    for (int c = 0; c < (1 << bits_); ++c) {
      const int k = c & (sign - 1);
      values_[size_t(c)] = k > top_code_
                               ? std::numeric_limits<float>::quiet_NaN()
                               : (c & sign ? -magnitudes_[size_t(k)] : magnitudes_[size_t(k)]);
    }
  }
}

int BlockQuantizer::float_code(float y) const {
  const float a = std::fabs(y);
  int k;
  if (a >= max_value_) {
    k = top_code_;  // saturate: |y| exceeds V only by the division's rounding
  } else {
    // The largest k with magnitudes_[k] <= a, then the nearer of k and k + 1; the midpoint of two
    // neighbours is exact in f32 (a few significant bits), so the comparison is exact.
    k = int(std::upper_bound(magnitudes_.begin(), magnitudes_.begin() + top_code_ + 1, a) -
            magnitudes_.begin()) -
        1;
    const float mid = (magnitudes_[size_t(k)] + magnitudes_[size_t(k + 1)]) / 2;
    if (a > mid || (a == mid && k % 2 == 1)) ++k;  // ties to the even code
  }
  return k == 0 || !std::signbit(y) ? k : k | (1 << (bits_ - 1));
}

void BlockQuantizer::encode(const float* x, int64_t n, uint8_t* out) const {
  const int64_t nb = blocks(n);
  uint8_t* codes = out + 4 * nb;
  if (bits_ == 4) std::memset(codes, 0, size_t(code_bytes(n)));
  const int vmax = int(max_value_);
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
    float s = !finite ? std::numeric_limits<float>::quiet_NaN() : m / max_value_;
    std::memcpy(out + 4 * b, &s, 4);
    for (int64_t j = lo; j < hi; ++j) {
      int c = 0;
      if (finite && s > 0) {
        const float y = x[j] / s;
        if (is_float()) {
          c = float_code(y);
        } else {
          // y is within one rounding of [−V, V]; the clamp only catches that rounding.
          c = std::clamp(int(std::round(y)), -vmax, vmax);
        }
      }
      if (bits_ == 8)
        codes[j] = uint8_t(c);  // int8: two's complement; fp8: the bit pattern
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
  const int v = bits_ == 8 ? int(codes[j]) : (codes[j / 2] >> (4 * (j % 2))) & 0xF;
  if (is_float()) return v;
  if (bits_ == 8) return v >= 128 ? v - 256 : v;
  return v >= 8 ? v - 16 : v;  // 4-bit two's complement
}

float BlockQuantizer::code_value(int code) const {
  return is_float() ? values_[size_t(code)] : float(code);
}

void BlockQuantizer::decode_add(const uint8_t* in, int64_t n, float* acc) const {
  const int64_t nb = blocks(n);
  for (int64_t b = 0; b < nb; ++b) {
    float s;
    std::memcpy(&s, in + 4 * b, 4);
    const int64_t lo = b * block_, hi = std::min(n, lo + block_);
    for (int64_t j = lo; j < hi; ++j) acc[j] += code_value(code(in, n, j)) * s;
  }
}

}  // namespace dplab
