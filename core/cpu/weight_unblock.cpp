#include "dplab/core/cpu/weight_unblock.h"

#include "dplab/core/error.h"

namespace dplab {

void unblock_weights_16b16a(const float* src, float* dst, int64_t O, int64_t I, int64_t K) {
  constexpr int64_t B = 16;
  DPLAB_CHECK(O % B == 0 && I % B == 0 && K > 0,
              "unblock_weights_16b16a: O {} and I {} must be multiples of 16, K {} positive", O, I,
              K);
  const int64_t ob_n = O / B, ib_n = I / B;
  // One (output block, input block) pair per iteration: its B·B·K floats (9 KiB for a 3×3 tap
  // set) are read once and written as B rows of B·K contiguous floats, one per output channel.
#pragma omp parallel for collapse(2) schedule(static) if (O * I * K > 65536)
  for (int64_t ob = 0; ob < ob_n; ++ob)
    for (int64_t ib = 0; ib < ib_n; ++ib) {
      const float* blk = src + (ob * ib_n + ib) * K * B * B;  // [K][16 i][16 o]
      if (K == 1) {  // a 16 × 16 transpose through a tile, so both sides move whole rows
        float tile[B][B];
        for (int64_t i = 0; i < B; ++i)
          for (int64_t o = 0; o < B; ++o) tile[o][i] = blk[i * B + o];
        for (int64_t o = 0; o < B; ++o)
          for (int64_t i = 0; i < B; ++i) dst[(ob * B + o) * I + ib * B + i] = tile[o][i];
        continue;
      }
      for (int64_t o = 0; o < B; ++o) {
        float* row = dst + ((ob * B + o) * I + ib * B) * K;  // [16 i][K], contiguous
        for (int64_t i = 0; i < B; ++i)
          for (int64_t k = 0; k < K; ++k) row[i * K + k] = blk[(k * B + i) * B + o];
      }
    }
}

}  // namespace dplab
