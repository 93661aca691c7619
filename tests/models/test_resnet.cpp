// ResNet family: torchvision's parameter counts, state_dict names/shapes/order, the v1.5 stride
// placement, output shapes for both stems, the kaiming fan_out initialisation and
// zero_init_residual.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"
#include "dplab/layers/conv2d.h"
#include "dplab/models/registry.h"
#include "dplab/models/resnet.h"

namespace dplab {
namespace {

std::shared_ptr<Module> child(const Module& m, const std::string& dotted) {
  std::shared_ptr<Module> cur;
  const Module* at = &m;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string part =
        dotted.substr(start, dot == std::string::npos ? dotted.npos : dot - start);
    cur.reset();
    for (auto& [n, c] : at->named_children())
      if (n == part) cur = c;
    if (!cur) return nullptr;
    at = cur.get();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

const Tensor* find(const std::vector<NamedTensor>& sd, const std::string& name) {
  for (auto& nt : sd)
    if (nt.name == name) return &nt.tensor;
  return nullptr;
}

TEST(ResNet, ParameterCountsEqualTorchvision) {
  // torchvision.models.resnetN(): sum(p.numel() for p in m.parameters()).
  const std::vector<std::pair<int, int64_t>> expected = {
      {18, 11689512}, {34, 21797672}, {50, 25557032}, {101, 44549160}, {152, 60192808}};
  for (auto [depth, count] : expected) {
    ResNetOptions o;
    o.depth = depth;
    EXPECT_EQ(make_resnet(o)->num_parameters(), count) << "resnet" << depth;
  }
  // CIFAR stem: 3x3 conv1 (1,728 weights instead of 9,408), fc 512 -> 10.
  ResNetOptions c;
  c.depth = 18;
  c.cifar_stem = true;
  c.num_classes = 10;
  EXPECT_EQ(make_resnet(c)->num_parameters(), 11689512 - 9408 + 1728 - 513000 + 5130);
  EXPECT_THROW(resnet_stage_blocks(42), Error);
}

TEST(ResNet, StateDictNamesShapesAndOrderMatchTorchvision) {
  ResNetOptions o;
  o.depth = 50;
  auto m = make_resnet(o);
  const auto sd = m->state_dict();
  // torchvision resnet50().state_dict(): 320 entries (161 parameters, 159 buffers... incl.
  // num_batches_tracked), starting and ending as below.
  EXPECT_EQ(m->named_parameters().size(), 161u);
  EXPECT_EQ(sd.size(), 161u + 3u * 53u);
  const std::vector<std::string> head = {
      "conv1.weight",          "bn1.weight",         "bn1.bias",
      "bn1.running_mean",      "bn1.running_var",    "bn1.num_batches_tracked",
      "layer1.0.conv1.weight", "layer1.0.bn1.weight"};
  for (size_t i = 0; i < head.size(); ++i) EXPECT_EQ(sd[i].name, head[i]);
  EXPECT_EQ(sd[sd.size() - 2].name, "fc.weight");
  EXPECT_EQ(sd.back().name, "fc.bias");
  const std::vector<std::pair<std::string, Shape>> shapes = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"layer1.0.downsample.0.weight", {256, 64, 1, 1}},
      {"layer1.0.downsample.1.running_var", {256}},
      {"layer2.0.conv2.weight", {128, 128, 3, 3}},
      {"layer3.5.conv3.weight", {1024, 256, 1, 1}},
      {"layer4.2.bn3.bias", {2048}},
      {"fc.weight", {1000, 2048}},
  };
  for (auto& [n, s] : shapes) {
    const Tensor* t = find(sd, n);
    ASSERT_NE(t, nullptr) << n;
    EXPECT_EQ(t->shape(), s) << n;
  }
  EXPECT_EQ(find(sd, "layer1.1.downsample.0.weight"), nullptr);
  EXPECT_EQ(find(sd, "layer4.0.bn2.num_batches_tracked")->dtype(), DType::i64);
  // v1.5: the 3x3 conv of the first block of stages 2-4 has stride 2, the 1x1 convs stride 1.
  auto conv2 = std::dynamic_pointer_cast<Conv2d>(child(*m, "layer2.0.conv2"));
  auto conv1 = std::dynamic_pointer_cast<Conv2d>(child(*m, "layer2.0.conv1"));
  ASSERT_TRUE(conv2 && conv1);
  EXPECT_EQ(conv2->options().stride, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(conv1->options().stride, (std::array<int64_t, 2>{1, 1}));
}

TEST(ResNet, OutputShapesForBothStemsAndRegistry) {
  auto r50 = make_model("resnet50", 1, 7);
  r50->eval();
  EXPECT_EQ((*r50)(test::random_tensor({1, 3, 64, 64}, 2, -1.f, 1.f)).shape(), (Shape{1, 7}));
  auto c18 = make_model("resnet18_cifar", 1);
  EXPECT_EQ((*c18)(test::random_tensor({2, 3, 32, 32}, 3, -1.f, 1.f)).shape(), (Shape{2, 10}));
  EXPECT_EQ(model_info("resnet152").input_shape, (Shape{3, 224, 224}));
  EXPECT_EQ(model_info("resnet101").num_classes, 1000);
  EXPECT_EQ(model_info("resnet34_cifar").input_shape, (Shape{3, 32, 32}));
  EXPECT_THROW((*c18)(Tensor::zeros({2, 1, 32, 32})), Error);
}

TEST(ResNet, GreyScaleStemForOneChannelData) {
  // Fashion-MNIST into a CIFAR-stem ResNet: the stem conv takes 1 channel, the rest is the
  // same network (conv1 is 64 x 1 x 3 x 3; 28 x 28 inputs reach the global average pool).
  auto g = make_model("resnet18_cifar", 1, 10, false, 1);
  const auto sd = g->state_dict();
  EXPECT_EQ(find(sd, "conv1.weight")->shape(), (Shape{64, 1, 3, 3}));
  EXPECT_EQ(find(sd, "layer1.0.conv1.weight")->shape(), (Shape{64, 64, 3, 3}));
  EXPECT_EQ((*g)(test::random_tensor({2, 1, 28, 28}, 4, -1.f, 1.f)).shape(), (Shape{2, 10}));
  EXPECT_THROW((*g)(Tensor::zeros({2, 3, 28, 28})), Error);
  // The parameter count drops by the stem's 64 x 2 x 3 x 3 = 1152 weights against RGB.
  auto rgb = make_model("resnet18_cifar", 1);
  int64_t n_g = 0, n_rgb = 0;
  for (const auto& p : g->parameters()) n_g += p.numel();
  for (const auto& p : rgb->parameters()) n_rgb += p.numel();
  EXPECT_EQ(n_rgb - n_g, 1152);
  // Models without an adaptable stem refuse another channel count.
  EXPECT_THROW(make_model("mnist_cnn", 1, 10, false, 3), Error);
  EXPECT_NO_THROW(make_model("mnist_cnn", 1, 10, false, 1));
}

TEST(ResNet, KaimingFanOutInitAndLinearDefault) {
  auto m = make_model("resnet18", 5);
  const auto sd = m->state_dict();
  // layer4.0.conv2: 512 x 512 x 3 x 3, fan_out = 512 * 9, std = sqrt(2 / 4608) ~ 0.02083.
  const auto w = find(sd, "layer4.0.conv2.weight")->to_vector();
  double s = 0, s2 = 0;
  for (float v : w) s += v, s2 += double(v) * v;
  const double n = double(w.size()), mean = s / n, sd_got = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 1e-4);
  EXPECT_NEAR(sd_got, std::sqrt(2.0 / 4608.0), 0.01 * std::sqrt(2.0 / 4608.0));
  for (float v : find(sd, "fc.weight")->to_vector()) ASSERT_LE(std::abs(v), 1.0 / std::sqrt(512.0));
  for (float v : find(sd, "bn1.weight")->to_vector()) ASSERT_EQ(v, 1.f);
  for (float v : find(sd, "layer1.0.bn2.weight")->to_vector()) ASSERT_EQ(v, 1.f);
  // Same seed, same weights.
  EXPECT_EQ(make_model("resnet18", 5)->state_dict()[0].tensor.to_vector(),
            sd[0].tensor.to_vector());
}

TEST(ResNet, ZeroInitResidualZeroesEachBlocksLastGamma) {
  for (int depth : {18, 50}) {
    ResNetOptions o;
    o.depth = depth;
    o.zero_init_residual = true;
    auto m = make_resnet(o);
    initialize(*m, 3);
    const std::string last = depth >= 50 ? "bn3" : "bn2";
    int zeroed = 0;
    for (auto& nt : m->named_parameters()) {
      const bool is_last_gamma =
          nt.name.rfind("layer", 0) == 0 && nt.name.ends_with("." + last + ".weight");
      const bool is_gamma = nt.name.ends_with("bn1.weight") || nt.name.ends_with("bn2.weight") ||
                            nt.name.ends_with("bn3.weight") ||
                            nt.name.ends_with("downsample.1.weight");
      if (!is_gamma) continue;
      for (float v : nt.tensor.to_vector()) ASSERT_EQ(v, is_last_gamma ? 0.f : 1.f) << nt.name;
      zeroed += is_last_gamma;
    }
    EXPECT_EQ(zeroed, depth == 18 ? 8 : 16) << depth;
  }
}

}  // namespace
}  // namespace dplab

namespace dplab {
namespace {

TEST(ResNetRegistry, ZeroInitResidualReachesTheModelByName) {
  int zero = 0, one = 0;
  for (const auto& p : make_model("resnet18", 3, -1, true)->named_parameters()) {
    if (p.name.find(".bn2.weight") == std::string::npos) continue;
    for (float v : p.tensor.to_vector()) (v == 0.f ? zero : one) += 1;
  }
  EXPECT_EQ(one, 0);
  EXPECT_GT(zero, 0);
  EXPECT_THROW(make_model("mnist_cnn", 3, -1, true), Error);
}

}  // namespace
}  // namespace dplab
