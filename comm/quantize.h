// Symmetric block quantisation of f32 values to 8 or 4 bits, for exchanges that send low-precision
// values by allgather and sum them in f32 after decoding (Streaming DiLoCo's quantised outer
// gradients, comm/algorithms/streaming_diloco.h).
//
// The values are cut into blocks of `block` consecutive elements (the last one shorter). Per
// block, with m = max |x_j| and q = 2^(bits−1) − 1 (127 for int8, 7 for int4):
//   scale s = m / q (f32 division; 0 when the block is all zeros)
//   code  c_j = clamp(round(x_j / s), −q, q)   (f32 division, round half away from zero)
//   value x̂_j = c_j · s                        (f32 product)
// The code range is symmetric (−128 and −8 are never used), so 0 is exact and the sign is kept.
// Error: the f32 division gives x_j / s up to 2^−24 q, the rounding to c_j moves it by at
// most 1/2, and the f32 product adds at most 2^−24 |c_j s|; so |x_j − x̂_j| ≤ s/2 + 2^−22 m:
// half a step, up to a few f32 ulps of the block's maximum (the tests check that bound). A
// block holding a non-finite value (NaN, inf) gets scale NaN and codes 0, so its decoded values
// are NaN: a non-finite input reaches every rank instead of vanishing.
//
// Why blocks and not one scale per tensor or fragment: a scale is set by the block's largest
// value, and a fragment spans tensors of very different magnitudes (weights, biases): with one
// scale, small tensors would round to 0 (int4 has only 7 levels per sign). A block of 256 costs
// 4 bytes of scale per 256 elements (1.6% of int8's payload, 3.1% of int4's) and never spans
// more than a few tensors.
//
// Packed layout of n values (packed_bytes(n) bytes): the blocks' scales (f32, host byte order),
// then the codes: int8, one byte each (two's complement); int4, two per byte, element 2i in
// the low nibble and 2i+1 in the high one (4-bit two's complement; an odd n leaves the last
// high nibble 0).
#pragma once
#include <cstdint>
#include <string>

namespace dplab {

class BlockQuantizer {
 public:
  // bits: 8 or 4; block >= 1 elements. Throws naming `what` (the option) otherwise.
  BlockQuantizer(int bits, int64_t block, const std::string& what = "quantize");
  int bits() const { return bits_; }
  int64_t block() const { return block_; }
  int qmax() const { return qmax_; }
  int64_t blocks(int64_t n) const { return (n + block_ - 1) / block_; }
  int64_t code_bytes(int64_t n) const { return bits_ == 8 ? n : (n + 1) / 2; }
  // Scales + codes of n values.
  int64_t packed_bytes(int64_t n) const { return 4 * blocks(n) + code_bytes(n); }
  // x[0..n) -> out[0..packed_bytes(n)).
  void encode(const float* x, int64_t n, uint8_t* out) const;
  // acc[j] += x̂_j for the n values packed in `in` (f32 additions).
  void decode_add(const uint8_t* in, int64_t n, float* acc) const;
  // The code of element j (−q .. q) and its block's scale, read from a packed buffer of n values.
  int code(const uint8_t* in, int64_t n, int64_t j) const;
  float scale(const uint8_t* in, int64_t j) const;

 private:
  int bits_;
  int64_t block_;
  int qmax_;
};

}  // namespace dplab
