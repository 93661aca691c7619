// Block-scaled quantisation of f32 values to 8 or 4 bits, for exchanges that send low-precision
// values and sum them in f32 after decoding (Streaming DiLoCo's quantised outer gradients,
// comm/algorithms/streaming_diloco.h). Four formats, each named for what it is:
//
//   int8      linear integer codes −127 .. 127 (absmax), one byte each
//   int4      linear integer codes −7 .. 7 (absmax), two per byte
//   fp8_e4m3  8-bit float, 1 sign, 4 exponent (bias 7), 3 mantissa bits, the "fn" variant of
//             the OCP FP8 spec that torch.float8_e4m3fn and torchft use: no infinities, largest
//             value 448, S.1111.111 is NaN (never produced), subnormals k · 2^−9
//   fp4_e2m1  4-bit float, 1 sign, 2 exponent (bias 1), 1 mantissa bit (the OCP MX FP4
//             element): magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; two per byte
//
// The values are cut into blocks of `block` consecutive elements (the last one shorter). Per
// block, with m = max |x_j| and V the format's largest magnitude (127, 7, 448, 6):
//   scale s = m / V (f32 division; 0 when the block is all zeros)
//   y_j = x_j / s   (f32 division)
//   int:   code c_j = clamp(round(y_j), −V, V), round half away from zero; value x̂_j = c_j · s
//   float: code = the representable magnitude nearest |y_j| (ties to the even code, as IEEE and
//          the OCP spec round), saturating at V, with y_j's sign (no sign on a zero code);
//          value x̂_j = (decoded code) · s
// so the block's largest element maps to ±V and every code uses the block's full range. The
// int codes are symmetric (−128 and −8 unused), so 0 is exact and the sign is kept.
// Error: int formats: |x_j − x̂_j| ≤ s/2 + 2^−22 m (half a step, up to a few f32 ulps of the
// block's maximum); float formats: half the spacing of the format's values around |y_j|, times s
// (relative for normal values: 2^−4 for e4m3, 2^−2 for e2m1), plus the same ulps. A block holding
// a non-finite value (NaN, inf) gets scale NaN and codes 0, so its decoded values are NaN: a
// non-finite input reaches every rank instead of vanishing.
//
// Why blocks and not one scale per tensor or fragment: a scale is set by the block's largest
// value, and a fragment spans tensors of very different magnitudes (weights, biases): with one
// scale, small tensors would round to 0 (int4 has only 7 levels per sign). A block of 256 costs
// 4 bytes of scale per 256 elements (1.6% of an 8-bit payload, 3.1% of a 4-bit one).
//
// Packed layout of n values (packed_bytes(n) bytes): the blocks' scales (f32, host byte order),
// then the codes: 8-bit formats one byte each (int8: two's complement; fp8: the bit pattern);
// 4-bit formats two per byte, element 2i in the low nibble and 2i+1 in the high one (int4: 4-bit
// two's complement; fp4: sign in bit 3); an odd n leaves the last high nibble 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab {

enum class QuantFormat { int8, int4, fp8_e4m3, fp4_e2m1 };

// "int8", "int4", "fp8_e4m3", "fp4_e2m1"; throws naming `what` (the option) otherwise.
QuantFormat parse_quant_format(const std::string& name, const std::string& what);
const char* quant_format_name(QuantFormat f);

class BlockQuantizer {
 public:
  // block >= 1 elements. Throws naming `what` (the option) otherwise.
  BlockQuantizer(QuantFormat format, int64_t block, const std::string& what = "quantize");
  QuantFormat format() const { return format_; }
  int bits() const { return bits_; }
  bool is_float() const {
    return format_ == QuantFormat::fp8_e4m3 || format_ == QuantFormat::fp4_e2m1;
  }
  int64_t block() const { return block_; }
  // V: the largest code magnitude (127, 7, 448, 6); a block's scale is its max |x| / V.
  float max_value() const { return max_value_; }
  int64_t blocks(int64_t n) const { return (n + block_ - 1) / block_; }
  int64_t code_bytes(int64_t n) const { return bits_ == 8 ? n : (n + 1) / 2; }
  // Scales + codes of n values.
  int64_t packed_bytes(int64_t n) const { return 4 * blocks(n) + code_bytes(n); }
  // x[0..n) -> out[0..packed_bytes(n)).
  void encode(const float* x, int64_t n, uint8_t* out) const;
  // acc[j] += x̂_j for the n values packed in `in` (f32 additions).
  void decode_add(const uint8_t* in, int64_t n, float* acc) const;
  // The code of element j read from a packed buffer of n values: int formats the signed integer
  // (−V .. V), float formats the bit pattern (0 .. 255 or 0 .. 15).
  int code(const uint8_t* in, int64_t n, int64_t j) const;
  // What a code stands for before scaling (int: the integer; float: the format's value).
  float code_value(int code) const;
  float scale(const uint8_t* in, int64_t j) const;

 private:
  int float_code(float y) const;  // the float code nearest y (see the header)
  QuantFormat format_;
  int bits_;
  int64_t block_;
  float max_value_;
  // Float formats: magnitude of each unsigned code 0 .. 2^(bits−1) − 1 (increasing), the last
  // usable one (e4m3: 126, 127 being NaN), and the decoded value of every code (sign included).
  std::vector<float> magnitudes_;
  int top_code_ = 0;
  std::vector<float> values_;
};

}  // namespace dplab
