// He et al.'s CIFAR ResNets (models/resnet_he_cifar.h): parameter counts from the architecture by
// hand, the state_dict layout Crossover-SGD's "blocks" segments read, stride placement and
// output shapes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/harness.h"
#include "dplab/layers/conv2d.h"
#include "dplab/models/registry.h"
#include "dplab/models/resnet_he_cifar.h"

namespace dplab {
namespace {

// Parameters of a 6n + 2 network by hand (3x3 convs without bias, BatchNorm gamma and beta,
// option-B shortcuts in the first block of stages 2 and 3):
//   stem     9 in 16 + 2 x 16
//   stage 1  n (2 x 9 x 16 x 16 + 2 x 2 x 16)
//   stage 2  9 x 16 x 32 + 9 x 32 x 32 + 2 x 2 x 32 + (16 x 32 + 2 x 32)
//            + (n - 1) (2 x 9 x 32 x 32 + 2 x 2 x 32)
//   stage 3  the same with 32 -> 64
//   fc       64 x 10 + 10
int64_t hand_count(int64_t n, int64_t in) {
  int64_t s = 9 * in * 16 + 32;
  s += n * (2 * 9 * 16 * 16 + 2 * 32);
  s += (9 * 16 * 32 + 9 * 32 * 32 + 2 * 64 + 16 * 32 + 64) + (n - 1) * (2 * 9 * 32 * 32 + 2 * 64);
  s +=
      (9 * 32 * 64 + 9 * 64 * 64 + 2 * 128 + 32 * 64 + 128) + (n - 1) * (2 * 9 * 64 * 64 + 2 * 128);
  return s + 64 * 10 + 10;
}

TEST(HeCifarResNet, ParameterCountsFromTheArchitecture) {
  EXPECT_EQ(hand_count(3, 3), 272474);  // ResNet-20: the paper's "0.27M" (option A: 269,722)
  for (int depth : {20, 32, 44, 56, 110}) {
    const int64_t n = (depth - 2) / 6;
    EXPECT_EQ(make_model("resnet" + std::to_string(depth) + "_cifar", 1)->num_parameters(),
              hand_count(n, 3))
        << depth;
  }
  EXPECT_EQ(make_model("resnet20_cifar", 1, 10, false, 1)->num_parameters(), hand_count(3, 1));
  for (int bad : {18, 21, 2, 0}) EXPECT_THROW(he_cifar_blocks_per_stage(bad), Error) << bad;
}

TEST(HeCifarResNet, LayoutStridesAndShapes) {
  auto m = make_model("resnet20_cifar", 1, 10, false, 1);
  std::map<std::string, Shape> shapes;
  for (const auto& nt : m->state_dict()) shapes[nt.name] = nt.tensor.shape();
  EXPECT_EQ(shapes.at("conv1.weight"), (Shape{16, 1, 3, 3}));
  EXPECT_EQ(shapes.at("layer1.2.conv2.weight"), (Shape{16, 16, 3, 3}));
  EXPECT_EQ(shapes.at("layer2.0.downsample.0.weight"), (Shape{32, 16, 1, 1}));
  EXPECT_EQ(shapes.at("layer3.2.conv2.weight"), (Shape{64, 64, 3, 3}));
  EXPECT_EQ(shapes.at("fc.weight"), (Shape{10, 64}));
  EXPECT_EQ(shapes.count("layer1.0.downsample.0.weight"), 0u);  // same shape: identity
  EXPECT_EQ(shapes.count("layer4.0.conv1.weight"), 0u);         // three stages
  // 28 x 28 -> 28 (stage 1) -> 14 (stage 2) -> 7 (stage 3) -> pooled.
  EXPECT_EQ((*m)(test::random_tensor({2, 1, 28, 28}, 4, -1.f, 1.f)).shape(), (Shape{2, 10}));
  EXPECT_THROW((*m)(Tensor::zeros({2, 3, 28, 28})), Error);
  EXPECT_EQ(model_info("resnet56_cifar").input_shape, (Shape{3, 32, 32}));
  EXPECT_TRUE(model_info("resnet20_cifar").any_channels);
}

}  // namespace
}  // namespace dplab
