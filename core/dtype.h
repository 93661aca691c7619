// Element types and the 16-bit float conversions (bit-exact, round-to-nearest-even), shared by
// the CPU and CUDA paths.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dplab/core/hostdevice.h"

namespace dplab {

enum class DType : uint8_t { f32, bf16, f16, i32, i64, u8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::f16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 0;
}
std::string_view dtype_name(DType t);
// Parses "f32", "float32", "bf16", "f16", "fp16", "i32", "i64", "u8"; throws on anything else.
DType parse_dtype(std::string_view s);
// safetensors names: F32, BF16, F16, I32, I64, U8.
std::string_view dtype_safetensors_name(DType t);
DType dtype_from_safetensors(std::string_view s);
constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

// ---- 16-bit float conversions --------------------------------------------------------------
DPLAB_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
DPLAB_HD float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// bf16: top 16 bits of f32, round to nearest even; NaN stays a (quiet) NaN.
DPLAB_HD uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
DPLAB_HD float bf16_to_f32(uint16_t h) {
  return bits_f32(static_cast<uint32_t>(h) << 16);
}

// IEEE binary16, round to nearest even, overflow to inf, subnormals kept.
DPLAB_HD uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (a < 0x38800000u) {                                               // subnormal or zero
    // value = a_float; f16 subnormal unit is 2^-24. Round a_float * 2^24 to nearest even.
    if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    int exp = static_cast<int>(a >> 23);  // biased
    int shift = 126 - exp;                // mant * 2^(exp-127-23) * 2^24 = mant >> (126-exp)
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits
  uint32_t r = a - 0x38000000u;  // exponent -112
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}
DPLAB_HD float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    // subnormal: mant * 2^-24
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Storage types for the 16-bit floats: plain bit containers, converted explicitly.
struct bf16_t {
  uint16_t bits;
};
struct f16_t {
  uint16_t bits;
};

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<bf16_t> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<f16_t> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};

// Load any element as float / store float into any element (used by casts and reference code).
DPLAB_HD float load_as_f32(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::i32:
      return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case DType::i64:
      return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case DType::u8:
      return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
  }
  return 0.f;
}
DPLAB_HD void store_from_f32(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = v;
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = f32_to_bf16(v);
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = f32_to_f16(v);
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DType::u8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
  }
}

}  // namespace dplab
