// Counter-based Philox4x32-10 (Salmon et al., SC'11). A draw is a pure function of
// (seed, stream, counter), so results do not depend on thread count or order, and the CPU and
// CUDA paths produce the same numbers.
#pragma once
#include <cstdint>

#include "dplab/core/hostdevice.h"

namespace dplab {

struct Philox4 {
  uint32_t v[4];
};

DPLAB_HD uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Four 32-bit random words for (seed, stream, counter).
DPLAB_HD Philox4 philox4x32(uint64_t seed, uint64_t stream, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    uint32_t lo0 = philox_mulhilo(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = philox_mulhilo(0xCD9E8D57u, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform float in [0, 1) with 24 random bits.
DPLAB_HD float philox_uniform(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// Draw i of (seed, stream) as a uniform float in [0, 1): the one definition every backend uses
// (the random kernels of core/kernels/random.h; element i takes word i % 4 of block i / 4).
DPLAB_HD float philox_draw_uniform(uint64_t seed, uint64_t stream, int64_t i) {
  const uint64_t u = static_cast<uint64_t>(i);
  return philox_uniform(philox4x32(seed, stream, u / 4).v[u % 4]);
}

// A sequential stream of draws for host code (samplers, initialisers, topology draws).
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  uint32_t next_u32() {
    if (pos_ == 4) {
      block_ = philox4x32(seed_, stream_, counter_++);
      pos_ = 0;
    }
    return block_.v[pos_++];
  }
  uint64_t next_u64() {
    uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }
  float uniform() { return philox_uniform(next_u32()); }  // [0, 1)
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Exactly uniform integer in [0, n), n > 0 (rejection sampling, no modulo bias).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next_u64();
    while (x >= limit);
    return x % n;
  }
  // Standard normal (Box-Muller).
  float normal();
  uint64_t counter() const { return counter_; }

 private:
  uint64_t seed_, stream_;
  uint64_t counter_ = 0;
  Philox4 block_{};
  int pos_ = 4;
};

}  // namespace dplab
