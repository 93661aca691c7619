// cuda::ChannelWalk (core/cuda/channel_walk.h), the index walk of the CUDA batch-norm kernels,
// against the division it replaces: element j of channel c in a contiguous [N, C, HW] tensor is
// at ((j / HW)·C + c)·HW + j % HW, in an nhwc one at (j / HW·HW + j % HW)·C + c. Plain host code,
// so it runs without a device.
#include <gtest/gtest.h>

#include <cstdint>

#include "dplab/core/cuda/channel_walk.h"

namespace dplab {
namespace {

TEST(ChannelWalk, VisitsTheOffsetsTheDivisionGives) {
  // Planes smaller than, equal to and larger than the step, and not dividing it; steps of a
  // CUDA block (256) and of 1.
  for (int64_t hw : {1, 5, 49, 255, 256, 257, 300}) {
    for (int64_t step : {1, 7, 256}) {
      for (int64_t C : {1, 3}) {
        const int64_t N = 4;
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t first = 0; first < step && first < 300; first += first < 8 ? 1 : 37) {
            cuda::ChannelWalk w(first, step, c, C, hw);
            for (int64_t j = first; j < N * hw; j += step, w.next()) {
              const int64_t want = ((j / hw) * C + c) * hw + j % hw;
              ASSERT_EQ(w.offset(), want) << "HW " << hw << " step " << step << " C " << C << " c "
                                          << c << " first " << first << " j " << j;
            }
          }
        }
      }
    }
  }
}

TEST(ChannelWalk, ChannelsLastVisitsRowsOfTheChannel) {
  // nhwc: element j = n·HW + i of channel c is at (n·HW + i)·C + c, whatever HW is.
  for (int64_t hw : {1, 5, 49}) {
    for (int64_t step : {1, 8, 24}) {
      for (int64_t C : {1, 3, 40}) {
        const int64_t N = 3;
        for (int64_t c = 0; c<C; c += C> 3 ? 13 : 1) {
          for (int64_t first = 0; first < step; ++first) {
            cuda::ChannelWalk w(first, step, c, C, hw, /*channels_last=*/true);
            for (int64_t j = first; j < N * hw; j += step, w.next()) {
              const int64_t n = j / hw, i = j % hw;
              ASSERT_EQ(w.offset(), (n * hw + i) * C + c)
                  << "HW " << hw << " step " << step << " C " << C << " c " << c << " j " << j;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dplab
