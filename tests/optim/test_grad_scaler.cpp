// Dynamic loss scaling (optim/grad_scaler.h) and the fused unscale kernel, plus mixed-precision
// training of mnist_cnn: bf16 autocast and f16 autocast with the scaler both still learn.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/harness.h"
#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops.h"
#include "dplab/layers/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

struct OneTensor {
  Tensor w = Tensor::from_vector({1, 2, 3}, {3});
  ParamArena arena{{{"w", w}}, ParamArena::Layout::given_order};
  SGD sgd{arena, {.lr = 0.5}};
  void set_grad(std::vector<float> g) { w.grad().copy_(Tensor::from_vector(g, {3})); }
};

TEST(GradScaler, DefaultsArePyTorchs) {
  OneTensor t;
  GradScaler s(t.arena);
  EXPECT_EQ(s.scale(), 65536.0);
  const GradScalerOptions o;
  EXPECT_EQ(o.growth_factor, 2.0);
  EXPECT_EQ(o.backoff_factor, 0.5);
  EXPECT_EQ(o.growth_interval, 2000);
}

TEST(GradScaler, SkipsTheStepOnInfOrNanAndBacksOff) {
  OneTensor t;
  GradScaler s(t.arena);
  for (float bad : {kInf, -kInf, std::nanf("")}) {
    const double before = s.scale();
    t.set_grad({1, bad, 3});
    EXPECT_FALSE(s.step(t.sgd));
    EXPECT_TRUE(s.found_inf());
    s.update();
    EXPECT_EQ(s.scale(), before * 0.5);
    EXPECT_EQ(s.growth_tracker(), 0);
    EXPECT_EQ(t.w.to_vector(), (std::vector<float>{1, 2, 3})) << "the step must be skipped";
  }
  EXPECT_EQ(s.skipped_steps(), 3);
  EXPECT_EQ(t.sgd.steps(), 0);
}

TEST(GradScaler, GrowsAfterTheIntervalOfFiniteSteps) {
  OneTensor t;
  GradScaler s(t.arena, {.init_scale = 8, .growth_interval = 3});
  for (int k = 0; k < 2; ++k) {
    t.set_grad({8, 8, 8});
    EXPECT_TRUE(s.step(t.sgd));
    s.update();
    EXPECT_EQ(s.scale(), 8.0);
    EXPECT_EQ(s.growth_tracker(), k + 1);
  }
  t.set_grad({1, kInf, 1});  // an overflow restarts the streak
  s.step(t.sgd);
  s.update();
  EXPECT_EQ(s.scale(), 4.0);
  for (int k = 0; k < 3; ++k) {
    t.set_grad({4, 4, 4});
    EXPECT_TRUE(s.step(t.sgd));
    s.update();
  }
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_THROW(s.update(), Error) << "update without a step";
}

TEST(GradScaler, UnscalesExactlyAndStepsOnTheTrueGradient) {
  OneTensor t, ref;
  GradScaler s(t.arena);
  const std::vector<float> g = {0.1f, -3.7f, 1e-3f};
  std::vector<float> scaled;
  for (float v : g) scaled.push_back(v * 65536.f);
  t.set_grad(scaled);
  ref.set_grad(g);
  EXPECT_FALSE(s.unscale());
  EXPECT_EQ(t.w.grad().to_vector(), g);
  EXPECT_FALSE(s.unscale()) << "a second unscale in the same step does nothing";
  EXPECT_EQ(t.w.grad().to_vector(), g);
  EXPECT_TRUE(s.step(t.sgd));
  ref.sgd.step();
  EXPECT_TRUE(bitwise_equal(t.w, ref.w));
  s.update();
  // The scaled loss: backward(scale_loss(l)) gives S times the gradient of l.
  Tensor p = Tensor::from_vector({2}, {1});
  p.set_requires_grad(true);
  backward(s.scale_loss(sum(mul(p, p))));
  EXPECT_EQ(p.grad().item(), 4.f * 65536.f);
}

TEST(GradScaler, StateRoundTrips) {
  OneTensor t;
  GradScaler a(t.arena, {.growth_interval = 5}), b(t.arena);
  t.set_grad({1, kInf, 1});
  a.step(t.sgd);
  a.update();
  t.set_grad({1, 1, 1});
  a.step(t.sgd);
  a.update();
  b.load_state(a.state());
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.growth_tracker(), 1);
  EXPECT_THROW(b.load_state({}), Error);
}

TEST(GradScaler, UnscaleKernelCpuMatchesRef) {
  for (int64_t n : {1, 17, 1000, 70001}) {
    for (int64_t bad_at : {int64_t(-1), n / 2, n - 1}) {
      Tensor g0 = test::random_tensor({n}, 40 + n, -1000.f, 1000.f);
      if (bad_at >= 0) {
        std::vector<float> v = g0.to_vector();
        v[bad_at] = bad_at % 2 ? kInf : std::nanf("");
        g0 = Tensor::from_vector(v, {n});
      }
      Tensor ga = g0.clone(), gb = g0.clone();
      Tensor fa = Tensor::zeros({1}), fb = Tensor::zeros({1});
      ref_backend().optim.amp_unscale(ga, 1.f / 1024, fa);
      cpu_backend().optim.amp_unscale(gb, 1.f / 1024, fb);
      EXPECT_TRUE(bitwise_equal(ga, gb)) << "n=" << n;
      EXPECT_EQ(fa.item(), bad_at >= 0 ? 1.f : 0.f) << "n=" << n << " bad_at " << bad_at;
      EXPECT_EQ(fb.item(), fa.item()) << "n=" << n;
      if (bad_at < 0) {
        EXPECT_EQ(ga.to_vector()[0], g0.to_vector()[0] / 1024);
      }
    }
  }
}

TEST(GradScalerCuda, UnscaleKernelMatchesRef) {
  DPLAB_CUDA_TEST_GATE();
  for (int64_t n : {1, 1000, 70001}) {
    for (int64_t bad_at : {int64_t(-1), n - 1}) {
      std::vector<float> v = test::random_tensor({n}, 50 + n, -1000.f, 1000.f).to_vector();
      if (bad_at >= 0) v[bad_at] = kInf;
      Tensor ga = Tensor::from_vector(v, {n}), gd = ga.to(Device::cuda(0));
      Tensor fa = Tensor::zeros({1}), fd = Tensor::zeros({1}, DType::f32, Device::cuda(0));
      ref_backend().optim.amp_unscale(ga, 1.f / 1024, fa);
      cuda_backend().optim.amp_unscale(gd, 1.f / 1024, fd);
      EXPECT_TRUE(bitwise_equal(gd, ga)) << "n=" << n;
      EXPECT_EQ(fd.item(), fa.item()) << "n=" << n;
    }
  }
}

// mnist_cnn on a fixed batch, 10 SGD steps with mixed precision: the loss must drop as it does
// in f32 (tests/models: about 2.31 -> 1.85).
float train_mnist_cnn(DType amp, bool scale) {
  auto m = make_model("mnist_cnn", 2);
  ParamArena arena(m->named_parameters());
  SGD sgd(arena, {.lr = 0.05, .momentum = 0.9});
  GradScaler scaler(arena);
  Tensor x = test::random_tensor({8, 1, 28, 28}, 6, 0.f, 1.f);
  Tensor target = Tensor::from_vector_i64({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  CrossEntropyLoss loss;
  float first = 0, last = 0;
  for (int k = 0; k < 10; ++k) {
    sgd.zero_grad();
    Tensor logits;
    {
      AutocastGuard a(amp);
      logits = (*m)(x);
    }
    Tensor l = loss(logits, target);
    if (scale) {
      backward(scaler.scale_loss(l));
      EXPECT_TRUE(scaler.step(sgd)) << "step " << k;
      scaler.update();
    } else {
      backward(l);
      sgd.step();
    }
    for (const NamedTensor& p : m->named_parameters()) EXPECT_EQ(p.tensor.dtype(), DType::f32);
    (k == 0 ? first : last) = l.item();
  }
  EXPECT_LT(last, 0.85f * first) << "first " << first << " last " << last;
  return last;
}

TEST(MixedPrecision, MnistCnnLearnsWithBf16Autocast) {
  const float bf16 = train_mnist_cnn(DType::bf16, false);
  const float f32 = train_mnist_cnn(DType::f32, false);
  EXPECT_NE(bf16, f32) << "autocast must change the arithmetic";
  EXPECT_NEAR(bf16, f32, 0.1f);
}

TEST(MixedPrecision, MnistCnnLearnsWithF16AndLossScaling) {
  train_mnist_cnn(DType::f16, true);
}

}  // namespace
}  // namespace dplab
