// The bookkeeping behind `cudnn_algorithms` (core/conv_algo_log.h): shapes written out by hand,
// merging per (direction, shape, algorithm, math), call counts.
#include <gtest/gtest.h>

#include "dplab/core/conv_algo_log.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

TEST(ConvAlgoLog, ShapeStringNamesTheLayerAsItSeesIt) {
  // ResNet-50's first 3x3 of stage 2 at batch 256, bf16.
  EXPECT_EQ(conv_shape_string(DType::bf16, 256, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1),
            "bf16 x[256,64,56,56] w[64,64,3,3] stride 1x1 pad 1x1 dilation 1x1 groups 1");
  // Grouped: the filter's second dim is C / groups.
  EXPECT_EQ(conv_shape_string(DType::f32, 3, 6, 9, 13, 9, 3, 2, 2, 1, 1, 2, 1, 2, 3),
            "f32 x[3,6,9,13] w[9,2,3,2] stride 2x1 pad 1x2 dilation 1x2 groups 3");
  EXPECT_THROW(conv_shape_string(DType::f32, 1, 5, 4, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, 2), Error);
}

TEST(ConvAlgoLog, OneEntryPerShapeDirectionAndAlgorithmWithEveryCallCounted) {
  ConvAlgoLog log;
  const std::string a = "f32 x[8,3,32,32] w[16,3,3,3] stride 1x1 pad 1x1 dilation 1x1 groups 1";
  const std::string b = "f32 x[8,16,32,32] w[16,16,3,3] stride 1x1 pad 1x1 dilation 1x1 groups 1";
  const size_t fa = log.chose("forward", a, "IMPLICIT_PRECOMP_GEMM", "fma", 1024);
  const size_t da = log.chose("backward_data", a, "ALGO_1", "fma", 0);
  const size_t fb = log.chose("forward", b, "WINOGRAD", "fma", 4096);
  EXPECT_EQ(fa, 0u);
  EXPECT_EQ(da, 1u);
  EXPECT_EQ(fb, 2u);
  for (int i = 0; i < 4; ++i) log.used(fa);
  log.used(fb);
  // The same choice made again under another cache key (another alignment or device): merged,
  // the larger workspace kept.
  EXPECT_EQ(log.chose("forward", a, "IMPLICIT_PRECOMP_GEMM", "fma", 2048), fa);
  // Another algorithm for the same shape (an unaligned view chose differently): its own entry.
  EXPECT_EQ(log.chose("forward", a, "IMPLICIT_GEMM", "fma", 0), 3u);

  const auto& e = log.entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].direction, "forward");
  EXPECT_EQ(e[0].shape, a);
  EXPECT_EQ(e[0].algorithm, "IMPLICIT_PRECOMP_GEMM");
  EXPECT_EQ(e[0].calls, 6);  // chosen (1) + 4 reuses + chosen again (1)
  EXPECT_EQ(e[0].workspace_bytes, 2048u);
  EXPECT_EQ(e[1].direction, "backward_data");
  EXPECT_EQ(e[1].calls, 1);
  EXPECT_EQ(e[2].algorithm, "WINOGRAD");
  EXPECT_EQ(e[2].calls, 2);
  EXPECT_EQ(e[2].workspace_bytes, 4096u);
  EXPECT_EQ(e[3].algorithm, "IMPLICIT_GEMM");
  EXPECT_EQ(e[3].calls, 1);
  EXPECT_THROW(log.used(4), Error);
}

}  // namespace
}  // namespace dplab
