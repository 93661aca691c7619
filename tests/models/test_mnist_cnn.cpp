// mnist_cnn and the model registry: the thesis architecture (names, 18,378 parameters, output
// shape), seeded initialisation, finite-difference gradients of the loss, and a few SGD steps
// through the ParamArena that must lower the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/harness.h"
#include "dplab/core/safetensors.h"
#include "dplab/layers/loss.h"
#include "dplab/models/mnist_cnn.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

TEST(MnistCnn, NamesShapesAndParameterCount) {
  auto m = make_model("mnist_cnn", 1);
  std::vector<std::pair<std::string, Shape>> got;
  for (auto& nt : m->state_dict()) got.emplace_back(nt.name, nt.tensor.shape());
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"cnn1.weight", {16, 1, 5, 5}},  {"cnn1.bias", {16}},
      {"cnn2.weight", {32, 16, 5, 5}}, {"cnn2.bias", {32}},
      {"fc1.weight", {10, 512}},       {"fc1.bias", {10}}};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(m->num_parameters(), 18378);
  Tensor y = (*m)(test::random_tensor({3, 1, 28, 28}, 4, 0.f, 1.f));
  EXPECT_EQ(y.shape(), (Shape{3, 10}));
  EXPECT_THROW((*m)(Tensor::zeros({3, 1, 32, 32})), Error);
  EXPECT_EQ(make_model("mnist_cnn", 1, 47)->num_parameters(), 18378 - 5130 + 512 * 47 + 47);
}

TEST(MnistCnn, SameSeedSameWeightsOtherSeedOtherWeights) {
  auto a = make_model("mnist_cnn", 123), b = make_model("mnist_cnn", 123);
  auto c = make_model("mnist_cnn", 124);
  auto sa = a->state_dict(), sb = b->state_dict(), sc = c->state_dict();
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].tensor.to_vector(), sb[i].tensor.to_vector()) << sa[i].name;
    EXPECT_NE(sa[i].tensor.to_vector(), sc[i].tensor.to_vector()) << sa[i].name;
  }
  // Within PyTorch's default bounds: 1/sqrt(fan_in) with fan_in 25, 400, 512.
  const std::vector<double> bound = {
      0.2, 0.2, 0.05, 0.05, 1 / std::sqrt(512.0), 1 / std::sqrt(512.0)};
  for (size_t i = 0; i < sa.size(); ++i)
    for (float v : sa[i].tensor.to_vector()) ASSERT_LE(std::fabs(v), bound[i]) << sa[i].name;
}

// The loss of mnist_cnn evaluated layer by layer by dplab (f32), with the piecewise-linear
// choices it made (ReLU signs, max-pool winners); the double reference below must make the same
// ones. Central differences are only valid where a perturbation keeps every choice, so elements
// whose +-eps evaluations cross a kink are skipped (with thousands of activations, some sit
// within eps of a kink for any data).
struct Trace {
  double loss;
  std::vector<uint8_t> pattern;
};

void record_choices(const Tensor& pre_relu, std::vector<uint8_t>& pattern) {
  auto v = pre_relu.to_vector();
  for (float z : v) pattern.push_back(z > 0.f);
  // 2x2 max-pool winner of relu(z) in each window (first maximum).
  const int64_t nc = pre_relu.size(0) * pre_relu.size(1), h = pre_relu.size(2),
                w = pre_relu.size(3);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t i = 0; i + 1 < h; i += 2)
      for (int64_t j = 0; j + 1 < w; j += 2) {
        uint8_t best = 0;
        float bv = -1.f;
        for (uint8_t k = 0; k < 4; ++k) {
          const float r = std::max(0.f, v[(c * h + i + k / 2) * w + j + k % 2]);
          if (r > bv) {
            bv = r;
            best = k;
          }
        }
        pattern.push_back(best);
      }
}

Trace trace(Module& m, const Tensor& x, const Tensor& target) {
  NoGradGuard ng;
  std::map<std::string, std::shared_ptr<Module>> c;
  for (auto& [n, mod] : m.named_children()) c[n] = mod;
  Trace t;
  Tensor a1 = (*c.at("cnn1"))(x);
  record_choices(a1, t.pattern);
  Tensor a2 = (*c.at("cnn2"))((*c.at("maxpool1"))((*c.at("relu1"))(a1)));
  record_choices(a2, t.pattern);
  Tensor logits = (*c.at("fc1"))((*c.at("flatten"))((*c.at("maxpool2"))((*c.at("relu2"))(a2))));
  // Cross-entropy in double from the f32 logits: the f32 loss value alone would limit the
  // finite differences to ~1e-4 absolute precision.
  auto lv = logits.to_vector();
  auto tv = target.to_vector_i64();
  const int64_t n = logits.size(0), k = logits.size(1);
  t.loss = 0;
  for (int64_t r = 0; r < n; ++r) {
    double mx = lv[r * k];
    for (int64_t j = 1; j < k; ++j) mx = std::max(mx, static_cast<double>(lv[r * k + j]));
    double se = 0;
    for (int64_t j = 0; j < k; ++j) se += std::exp(lv[r * k + j] - mx);
    t.loss += (mx + std::log(se) - lv[r * k + tv[r]]) / static_cast<double>(n);
  }
  return t;
}

// The same loss computed independently, in double, by naive loops over the parameters' values:
// conv 5x5 (valid) -> ReLU -> 2x2 max-pool, twice, then the linear layer and the cross-entropy,
// recording the same choices as record_choices. The finite differences are taken on this
// function: in double their rounding noise is ~1e-16 / eps, where the f32 forward's (measured
// ~1e-7 in the loss, so ~5e-4 in a gradient at eps 1e-4 on an AVX2 CPU) is as large as the
// gradients checked.
using Params = std::map<std::string, std::vector<double>>;

// One conv 5x5 (valid) -> ReLU -> 2x2 max-pool stage of one image [C, H, H] -> [O, P, P].
std::vector<double> ref_stage(const std::vector<double>& in, int64_t C, int64_t H,
                              const std::vector<double>& w, const std::vector<double>& b, int64_t O,
                              std::vector<uint8_t>& pattern, std::vector<uint8_t>& winners) {
  const int64_t K = 5, OH = H - K + 1, P = OH / 2;
  std::vector<double> z(size_t(O * OH * OH));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OH; ++j) {
        double acc = b[size_t(o)];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t u = 0; u < K; ++u)
            for (int64_t v = 0; v < K; ++v)
              acc += w[size_t(((o * C + c) * K + u) * K + v)] *
                     in[size_t((c * H + i + u) * H + j + v)];
        z[size_t((o * OH + i) * OH + j)] = acc;
      }
  for (double v : z) pattern.push_back(v > 0);
  std::vector<double> out(size_t(O * P * P));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < P; ++j) {
        uint8_t best = 0;
        double bv = -1;
        for (uint8_t k = 0; k < 4; ++k) {
          const double r = std::max(0.0, z[size_t((o * OH + 2 * i + k / 2) * OH + 2 * j + k % 2)]);
          if (r > bv) {
            bv = r;
            best = k;
          }
        }
        winners.push_back(best);
        out[size_t((o * P + i) * P + j)] = bv;
      }
  return out;
}

Trace ref_trace(const Params& p, const std::vector<double>& x, const std::vector<int64_t>& t) {
  const int64_t n = int64_t(t.size()), k = 10, F = 32 * 4 * 4;
  // The layout of record_choices: all of cnn1's ReLU signs and pool winners, then cnn2's.
  std::vector<uint8_t> s1, w1, s2, w2;
  Trace out{0, {}};
  std::vector<std::vector<double>> feats;
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<double> img(x.begin() + r * 784, x.begin() + (r + 1) * 784);
    const auto a1 = ref_stage(img, 1, 28, p.at("cnn1.weight"), p.at("cnn1.bias"), 16, s1, w1);
    feats.push_back(ref_stage(a1, 16, 12, p.at("cnn2.weight"), p.at("cnn2.bias"), 32, s2, w2));
  }
  // record_choices walks a batch layer as (n, c) planes: signs of the whole batch, then winners.
  for (auto* v : {&s1, &w1, &s2, &w2}) out.pattern.insert(out.pattern.end(), v->begin(), v->end());
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> l(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      double acc = p.at("fc1.bias")[size_t(j)];
      for (int64_t f = 0; f < F; ++f)
        acc += p.at("fc1.weight")[size_t(j * F + f)] * feats[size_t(r)][size_t(f)];
      l[size_t(j)] = acc;
    }
    const double mx = *std::max_element(l.begin(), l.end());
    double se = 0;
    for (double v : l) se += std::exp(v - mx);
    out.loss += (mx + std::log(se) - l[size_t(t[size_t(r)])]) / double(n);
  }
  return out;
}

TEST(MnistCnn, LossGradientMatchesFiniteDifferences) {
  auto m = make_model("mnist_cnn", 10);
  Tensor x = test::random_tensor({2, 1, 28, 28}, 5, 0.f, 1.f);
  Tensor target = Tensor::from_vector_i64({3, 7}, {2});
  Tensor loss = CrossEntropyLoss()((*m)(x), target);
  const Trace f32 = trace(*m, x, target);
  ASSERT_NEAR(f32.loss, loss.item(), 1e-6) << "the layer-by-layer trace must equal forward()";
  backward(loss);

  Params ref;
  for (auto& [name, p] : m->named_parameters()) {
    const auto v = p.to_vector();
    ref[name] = std::vector<double>(v.begin(), v.end());
  }
  const auto xf = x.to_vector();
  const std::vector<double> xd(xf.begin(), xf.end());
  const std::vector<int64_t> t = target.to_vector_i64();
  const Trace base = ref_trace(ref, xd, t);
  // The double reference and dplab's f32 forward make the same choices and agree on the loss
  // to f32 rounding (~1e-7 relative). The choices cannot differ by rounding on any CPU: on this
  // data the smallest margin of a choice in the double forward is 4.7e-6 (the gap between a
  // max-pool winner and the runner-up; the smallest |pre-activation| is 1.7e-5), while the f32
  // pre-activations deviate from the double ones by at most 4.3e-7 (measured on an AVX2 AMD
  // EPYC). A gap moves by at most twice that, 8.7e-7, and another summation order rounds by
  // the same amount.
  ASSERT_EQ(base.pattern, f32.pattern);
  ASSERT_NEAR(base.loss, f32.loss, 1e-5);

  // The tolerance is the f32 analytic gradient's rounding: its longest sums have 1,152 terms
  // (cnn1.weight: 2 images x 24 x 24 positions), which round by ~sqrt(n) u = 2e-6 relative
  // (u = 2^-24); measured at most 3.5e-8 absolute and 5e-7 relative on gradients of 1e-2 to
  // 1e-1 (AMD EPYC, AVX2), so 1e-5 + 1e-4 |g| leaves a wide margin, while a gradient that misses
  // one of ~1,000 terms is off by ~1e-3 relative. The central differences of the double
  // reference are exact to ~1e-12: within one set of choices the logits are linear in any one
  // parameter, so the truncation error is the cross-entropy's curvature times eps^2.
  const double eps = 1e-4;
  int checked = 0, skipped = 0;
  for (auto& [name, p] : m->named_parameters()) {
    const auto grad = p.grad().to_vector();
    std::vector<double>& data = ref.at(name);
    const int64_t n = p.numel(), step = std::max<int64_t>(1, n / 16);
    for (int64_t i = 0; i < n; i += step) {
      const double orig = data[size_t(i)];
      data[size_t(i)] = orig + eps;
      const Trace up = ref_trace(ref, xd, t);
      data[size_t(i)] = orig - eps;
      const Trace down = ref_trace(ref, xd, t);
      data[size_t(i)] = orig;
      if (up.pattern != base.pattern || down.pattern != base.pattern) {
        ++skipped;
        continue;
      }
      ++checked;
      const double numeric = (up.loss - down.loss) / (2 * eps);
      EXPECT_NEAR(grad[size_t(i)], numeric, 1e-5 + 1e-4 * std::fabs(numeric))
          << name << "[" << i << "]";
    }
  }
  EXPECT_GE(checked, 60);
  EXPECT_LE(skipped, checked / 4) << "too many elements near a kink to be a useful check";
}

TEST(MnistCnn, SgdStepsThroughTheArenaLowerTheLoss) {
  auto m = make_model("mnist_cnn", 2);
  ParamArena arena(m->named_parameters());
  SGD sgd(arena, {.lr = 0.05, .momentum = 0.9});  // about 2.31 -> 1.85 in 10 steps
  Tensor x = test::random_tensor({8, 1, 28, 28}, 6, 0.f, 1.f);
  Tensor target = Tensor::from_vector_i64({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  CrossEntropyLoss loss;
  float first = 0, last = 0;
  for (int k = 0; k < 10; ++k) {
    sgd.zero_grad();
    Tensor l = loss((*m)(x), target);
    backward(l);
    sgd.step();
    (k == 0 ? first : last) = l.item();
  }
  EXPECT_LT(last, 0.85f * first) << "first " << first << " last " << last;
}

TEST(MnistCnn, CheckpointRoundTripThroughSafetensorsGivesIdenticalOutputs) {
  auto a = make_model("mnist_cnn", 31), b = make_model("mnist_cnn", 32);
  Tensor x = test::random_tensor({2, 1, 28, 28}, 8, 0.f, 1.f);
  const std::string path = testing::TempDir() + "/mnist_cnn.safetensors";
  save_safetensors(path, a->state_dict(), {{"model", "mnist_cnn"}});
  EXPECT_NE((*a)(x).to_vector(), (*b)(x).to_vector());
  b->load_state_dict(load_safetensors(path));
  EXPECT_EQ((*a)(x).to_vector(), (*b)(x).to_vector());
}

TEST(ModelRegistry, InfoNamesAndUnknownModelError) {
  const std::vector<std::string> names = {
      "mnist_cnn",      "resnet18",        "resnet34",        "resnet50",
      "resnet101",      "resnet152",       "resnet18_cifar",  "resnet34_cifar",
      "resnet50_cifar", "resnet101_cifar", "resnet152_cifar", "resnet20_cifar",
      "resnet32_cifar", "resnet44_cifar",  "resnet56_cifar",  "resnet110_cifar"};
  EXPECT_EQ(model_names(), names);
  ModelInfo info = model_info("mnist_cnn");
  EXPECT_EQ(info.name, "mnist_cnn");
  EXPECT_EQ(info.input_shape, (Shape{1, 28, 28}));
  EXPECT_EQ(info.num_classes, 10);
  try {
    make_model("resnet9000", 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown model 'resnet9000'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mnist_cnn"), std::string::npos) << msg;
  }
  EXPECT_THROW(model_info("nope"), Error);
  EXPECT_THROW(make_model("mnist_cnn", 0, 0), Error);
}

}  // namespace
}  // namespace dplab
