// Layers: PyTorch names, default initialisation bounds and statistics, hand-computed forwards,
// train/eval behaviour (BatchNorm, Dropout), Sequential naming and the cross-entropy loss.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"
#include "dplab/layers/adaptive_avgpool2d.h"
#include "dplab/layers/avgpool2d.h"
#include "dplab/layers/batchnorm2d.h"
#include "dplab/layers/conv2d.h"
#include "dplab/layers/dropout.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/loss.h"
#include "dplab/layers/maxpool2d.h"
#include "dplab/layers/relu.h"
#include "dplab/layers/sequential.h"

namespace dplab {
namespace {

std::vector<std::string> names(const std::vector<NamedTensor>& v) {
  std::vector<std::string> r;
  for (auto& nt : v) r.push_back(nt.name);
  return r;
}

// Every value in [-bound, bound), the range well covered, mean ~ 0 and variance ~ bound^2 / 3
// (uniform). Tolerances are > 5 standard errors for the sample sizes used.
void expect_uniform(const Tensor& t, double bound, const std::string& what) {
  auto v = t.to_vector();
  double sum = 0, sq = 0, mx = 0;
  for (float x : v) {
    ASSERT_LE(std::fabs(x), bound) << what;
    sum += x;
    sq += static_cast<double>(x) * x;
    mx = std::max(mx, std::fabs(static_cast<double>(x)));
  }
  const double n = static_cast<double>(v.size());
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_GT(mx, 0.9 * bound) << what;
  if (v.size() >= 1000) {
    EXPECT_LT(std::fabs(mean), 6 * bound / std::sqrt(3 * n)) << what;
    EXPECT_NEAR(var, bound * bound / 3, 6 * std::sqrt(0.8 / n) * bound * bound / 3) << what;
  }
}

TEST(Conv2d, PyTorchDefaultInitBounds) {
  Conv2d conv(16, 32, 5);
  initialize(conv, 7);
  EXPECT_EQ(conv.fan_in(), 400);
  expect_uniform(conv.weight(), 1.0 / std::sqrt(400.0), "conv weight");
  expect_uniform(conv.bias(), 1.0 / std::sqrt(400.0), "conv bias");
  // Grouped: fan_in = in / groups * kh * kw.
  Conv2d grouped(8, 8, 3, {.groups = 4}, false);
  EXPECT_EQ(grouped.fan_in(), 18);
  EXPECT_EQ(grouped.weight().shape(), (Shape{8, 2, 3, 3}));
  EXPECT_FALSE(grouped.bias().defined());
  EXPECT_EQ(names(grouped.named_parameters()), std::vector<std::string>{"weight"});
}

TEST(Linear, PyTorchDefaultInitBounds) {
  Linear fc(512, 10);
  initialize(fc, 7);
  expect_uniform(fc.weight(), 1.0 / std::sqrt(512.0), "linear weight");
  expect_uniform(fc.bias(), 1.0 / std::sqrt(512.0), "linear bias");
  EXPECT_EQ(names(fc.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
}

TEST(Conv2d, HandComputedForwardAndRepr) {
  Conv2d conv(1, 1, 2);
  Tensor w = conv.weight(), b = conv.bias();
  w.copy_(Tensor::from_vector({1, 2, 3, 4}, {1, 1, 2, 2}));
  b.fill_(0.5);
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  // out[0,0] = 1*1 + 2*2 + 3*4 + 4*5 + 0.5 = 37.5, and so on across the 2x2 outputs.
  EXPECT_EQ(conv(x).to_vector(), (std::vector<float>{37.5f, 47.5f, 67.5f, 77.5f}));
  EXPECT_EQ(conv.describe(), "Conv2d(1, 1, kernel_size=(2, 2), stride=(1, 1))");
  Conv2d c2(3, 64, 7, {.stride = {2, 2}, .padding = {3, 3}}, false);
  EXPECT_EQ(c2.describe(),
            "Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)");
  EXPECT_EQ(c2(Tensor::zeros({2, 3, 32, 32})).shape(), (Shape{2, 64, 16, 16}));
}

TEST(Linear, HandComputedForward) {
  Linear fc(3, 2);
  Tensor w = fc.weight(), b = fc.bias();
  w.copy_(Tensor::from_vector({1, 0, -1, 2, 1, 0}, {2, 3}));
  b.copy_(Tensor::from_vector({0.5f, -1}, {2}));
  Tensor x = Tensor::from_vector({1, 2, 3, -1, 0, 1}, {2, 3});
  EXPECT_EQ(fc(x).to_vector(), (std::vector<float>{-1.5f, 3.f, -1.5f, -3.f}));
  EXPECT_EQ(fc.describe(), "Linear(in_features=3, out_features=2, bias=True)");
}

TEST(BatchNorm2d, NamesBuffersAndInit) {
  BatchNorm2d bn(4);
  EXPECT_EQ(names(bn.state_dict()),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
  EXPECT_EQ(bn.num_batches_tracked().dtype(), DType::i64);
  EXPECT_EQ(bn.num_batches_tracked().shape(), Shape{});
  Tensor w = bn.weight(), rv = bn.running_var();
  w.fill_(3);
  rv.fill_(5);
  initialize(bn, 1);
  EXPECT_EQ(bn.weight().to_vector(), std::vector<float>(4, 1.f));
  EXPECT_EQ(bn.bias().to_vector(), std::vector<float>(4, 0.f));
  EXPECT_EQ(bn.running_mean().to_vector(), std::vector<float>(4, 0.f));
  EXPECT_EQ(bn.running_var().to_vector(), std::vector<float>(4, 1.f));
  BatchNorm2d plain(4, {.affine = false, .track_running_stats = false});
  EXPECT_TRUE(plain.state_dict().empty());
}

TEST(BatchNorm2d, TrainingUpdatesRunningStatsAndEvalUsesThem) {
  BatchNorm2d bn(1, {.momentum = 0.5});
  // Channel values 1, 2, 3, 6: mean 3, biased var 3.5, unbiased var 14/3.
  Tensor x = Tensor::from_vector({1, 2, 3, 6}, {2, 1, 1, 2});
  auto y = bn(x).to_vector();
  const float inv = 1.f / std::sqrt(3.5f + 1e-5f);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(y[i], (std::vector<float>{1, 2, 3, 6}[i] - 3.f) * inv, 1e-5) << i;
  EXPECT_FLOAT_EQ(bn.running_mean().item(), 1.5f);                     // 0.5*0 + 0.5*3
  EXPECT_FLOAT_EQ(bn.running_var().item(), 0.5f + 0.5f * 14.f / 3.f);  // unbiased
  bn(x);
  EXPECT_EQ(bn.num_batches_tracked().to_vector_i64(), std::vector<int64_t>{2});
  bn.eval();
  const float rm = bn.running_mean().item(), rvv = bn.running_var().item();
  auto e = bn(x).to_vector();
  EXPECT_NEAR(e[3], (6.f - rm) / std::sqrt(rvv + 1e-5f), 1e-5);
  EXPECT_EQ(bn.num_batches_tracked().to_vector_i64(), std::vector<int64_t>{2});
}

TEST(Pooling, MaxAvgAdaptiveAndFlattenForward) {
  Tensor x =
      Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  EXPECT_EQ(MaxPool2d(2)(x).to_vector(), (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(AvgPool2d(2)(x).to_vector(), (std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f}));
  EXPECT_EQ(AdaptiveAvgPool2d(1)(x).to_vector(), std::vector<float>{8.5f});
  EXPECT_EQ(Flatten()(x).shape(), (Shape{1, 16}));
  EXPECT_EQ(ReLU()(Tensor::from_vector({-1, 0, 2}, {3})).to_vector(),
            (std::vector<float>{0, 0, 2}));
  EXPECT_EQ(MaxPool2d(3, 2, 1).describe(),
            "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)");
}

TEST(Dropout, DeterministicPerSeedAndCallAndIdentityInEval) {
  Tensor x = Tensor::ones({4000});
  Dropout a(0.25, 11), b(0.25, 11);
  auto a1 = a(x).to_vector(), a2 = a(x).to_vector(), b1 = b(x).to_vector();
  EXPECT_EQ(a1, b1);  // same seed, same call number
  EXPECT_NE(a1, a2);  // the next call draws a new mask
  int zeros = 0;
  for (float v : a1) {
    if (v == 0.f)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(v, 1.f / 0.75f);
  }
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.04);
  a.eval();
  EXPECT_EQ(a(x).to_vector(), x.to_vector());
  EXPECT_EQ(a.calls(), 2u);
  EXPECT_THROW(Dropout(1.5), Error);
}

TEST(Sequential, IndexNamesAndChaining) {
  auto seq = std::make_shared<Sequential>(Sequential{
      std::make_shared<Linear>(4, 3), std::make_shared<ReLU>(), std::make_shared<Linear>(3, 2)});
  EXPECT_EQ(names(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  initialize(*seq, 3);
  Tensor x = test::random_tensor({5, 4}, 2);
  auto* l0 = static_cast<Linear*>((*seq)[0].get());
  auto* l2 = static_cast<Linear*>((*seq)[2].get());
  Tensor expect = linear(relu(linear(x, l0->weight(), l0->bias())), l2->weight(), l2->bias());
  EXPECT_EQ((*seq)(x).to_vector(), expect.to_vector());
  EXPECT_THROW(seq->add("1", std::make_shared<ReLU>()), Error);
  EXPECT_EQ(seq->describe(),
            "Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n  (1): ReLU()\n"
            "  (2): Linear(in_features=3, out_features=2, bias=True)\n)");
}

TEST(CrossEntropyLoss, HandComputedWithAndWithoutLabelSmoothing) {
  // logits [0, ln 3] -> p = [1/4, 3/4]; target 1.
  Tensor logits = Tensor::from_vector({0.f, std::log(3.f)}, {1, 2});
  Tensor target = Tensor::from_vector_i64({1}, {1});
  EXPECT_NEAR(CrossEntropyLoss()(logits, target).item(), -std::log(0.75), 1e-6);
  // s = 0.2, C = 2: -(0.8 + 0.1) ln(3/4) - 0.1 ln(1/4)
  const double expect = -0.9 * std::log(0.75) - 0.1 * std::log(0.25);
  EXPECT_NEAR(CrossEntropyLoss(0.2)(logits, target).item(), expect, 1e-6);
  EXPECT_THROW(CrossEntropyLoss(-0.1), Error);
  EXPECT_EQ(CrossEntropyLoss(0.1).describe(), "CrossEntropyLoss(label_smoothing=0.1)");
}

TEST(Layers, GradientsReachConvAndLinearParameters) {
  auto seq = std::make_shared<Sequential>(
      Sequential{std::make_shared<Conv2d>(2, 3, 3, Conv2dOptions{.padding = {1, 1}}),
                 std::make_shared<BatchNorm2d>(3), std::make_shared<ReLU>(),
                 std::make_shared<AdaptiveAvgPool2d>(1), std::make_shared<Flatten>(),
                 std::make_shared<Linear>(3, 4)});
  initialize(*seq, 5);
  Tensor x = test::random_tensor({3, 2, 5, 5}, 8);
  Tensor target = Tensor::from_vector_i64({0, 3, 1}, {3});
  std::vector<Tensor> params = seq->parameters();
  CrossEntropyLoss loss(0.1);
  test::expect_gradients_match([&](const std::vector<Tensor>&) { return loss((*seq)(x), target); },
                               params, {.eps = 1e-3, .atol = 2e-3, .rtol = 2e-2});
}

}  // namespace
}  // namespace dplab
