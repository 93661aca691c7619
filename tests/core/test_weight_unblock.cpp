// unblock_weights_16b16a against the layout's definition (hand index arithmetic) and against
// oneDNN's own reorder from ABcd16b16a to abcd, on ResNet-like weight shapes.
#include <gtest/gtest.h>

#include <dnnl.hpp>
#include <vector>

#include "dplab/core/cpu/weight_unblock.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

// Distinct values, so a misplaced element cannot go unnoticed.
std::vector<float> distinct(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f + 1.f;
  return v;
}

// Element (o, i, k) of ABcd16b16a by its definition: blocks [O/16][I/16], inside a block the
// taps k, inside a tap 16 input channels of 16 output channels each.
TEST(WeightUnblock, PlacesEveryElementAsTheLayoutDefines) {
  for (const auto& [O, I, K] :
       {std::tuple<int64_t, int64_t, int64_t>{32, 48, 9}, {16, 16, 1}, {48, 32, 1}, {16, 32, 25}}) {
    const std::vector<float> src = distinct(size_t(O * I * K));
    std::vector<float> dst(src.size(), -1.f);
    unblock_weights_16b16a(src.data(), dst.data(), O, I, K);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t blocked =
              (((o / 16) * (I / 16) + i / 16) * K + k) * 256 + (i % 16) * 16 + o % 16;
          ASSERT_EQ(dst[size_t((o * I + i) * K + k)], src[size_t(blocked)])
              << "O " << O << " I " << I << " K " << K << " at o " << o << " i " << i << " k " << k;
        }
  }
}

TEST(WeightUnblock, MatchesOneDnnsReorder) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  // ResNet-50's kinds of weight (1×1 and 3×3, square and not) and a 7×7 one.
  for (const auto& [O, I, H] : {std::tuple<int64_t, int64_t, int64_t>{256, 64, 1},
                                {64, 256, 1},
                                {128, 128, 3},
                                {512, 512, 3},
                                {64, 16, 7}}) {
    const dnnl::memory::dims dims = {O, I, H, H};
    const size_t n = size_t(O * I * H * H);
    std::vector<float> src = distinct(n), want(n), got(n, -1.f);
    dnnl::memory blocked({dims, dt::f32, tag::ABcd16b16a}, eng, src.data());
    dnnl::memory plain({dims, dt::f32, tag::abcd}, eng, want.data());
    dnnl::reorder(blocked, plain).execute(strm, blocked, plain);
    strm.wait();
    unblock_weights_16b16a(src.data(), got.data(), O, I, H * H);
    EXPECT_EQ(got, want) << O << "x" << I << "x" << H << "x" << H;
  }
}

TEST(WeightUnblock, RefusesChannelsThatAreNotWholeBlocks) {
  std::vector<float> a(24 * 16), b(a.size());
  EXPECT_THROW(unblock_weights_16b16a(a.data(), b.data(), 24, 16, 1), Error);
  EXPECT_THROW(unblock_weights_16b16a(a.data(), b.data(), 16, 24, 1), Error);
}

}  // namespace
}  // namespace dplab
