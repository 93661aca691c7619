// LARS against its formula (optim/lars.h) for two steps, worked out independently in double.
//
// Setup: w (2-d [1, 2], LARS-scaled, weight decay on) = [3, 4]; b (1-d, excluded by default,
// weight decay off) = [1]. lr 1, momentum 1/2, wd 1/4, eta 1/10, eps 0.
// Step 0, w: g = [0, 2], ||w|| = 5, ||g|| = 2, trust = 0.1 * 5 / (2 + 0.25 * 5) = 2/13,
//   v = 2/13 * (g + wd w) = 2/13 * [0.75, 3] = [1.5/13, 6/13], w = [37.5/13, 46/13].
// Step 0, b: g = 4, trust 1, v = 4, b = -3.  Step 1, b: g = 3, v = 0.5 * 4 + 3 = 5, b = -8.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"
#include "dplab/optim/lars.h"

namespace dplab {
namespace {

TEST(LARS, TwoStepsMatchTheFormula) {
  Tensor w = Tensor::from_vector({3, 4}, {1, 2});
  Tensor b = Tensor::from_vector({1}, {1});
  ParamArena arena{{{"w", w}, {"b", b}}, ParamArena::Layout::given_order};
  arena.set_weight_decay([](const ArenaSegment& s) { return s.name == "w"; });
  ASSERT_FALSE(arena.segment("w").lars_excluded);
  ASSERT_TRUE(arena.segment("b").lars_excluded);  // default: 1-d tensors
  LARSOptions o;
  o.lr = 1.0;
  o.momentum = 0.5;
  o.weight_decay = 0.25;
  o.trust_coefficient = 0.1;
  LARS lars(arena, o);

  const double gw[2][2] = {{0, 2}, {1, -3}};
  const double gb[2] = {4, 3};
  double ew[2] = {3, 4}, vw[2] = {0, 0}, eb = 1, vb = 0;
  for (int k = 0; k < 2; ++k) {
    w.grad().copy_(Tensor::from_vector({float(gw[k][0]), float(gw[k][1])}, {1, 2}));
    b.grad().copy_(Tensor::from_vector({float(gb[k])}, {1}));
    lars.step();
    // The formula, step by step.
    const double wn = std::hypot(ew[0], ew[1]), gn = std::hypot(gw[k][0], gw[k][1]);
    const double trust = 0.1 * wn / (gn + 0.25 * wn);
    for (int i = 0; i < 2; ++i) {
      vw[i] = 0.5 * vw[i] + 1.0 * trust * (gw[k][i] + 0.25 * ew[i]);
      ew[i] -= vw[i];
    }
    vb = 0.5 * vb + 1.0 * gb[k];
    eb -= vb;
    if (k == 0) {  // the hand-worked numbers of the header
      EXPECT_NEAR(trust, 2.0 / 13.0, 1e-12);
      EXPECT_NEAR(ew[0], 37.5 / 13, 1e-12);
      EXPECT_NEAR(ew[1], 46.0 / 13, 1e-12);
    }
    const auto got = w.to_vector();
    EXPECT_NEAR(got[0], ew[0], 1e-5) << "step " << k;
    EXPECT_NEAR(got[1], ew[1], 1e-5) << "step " << k;
    EXPECT_EQ(b.to_vector()[0], float(eb)) << "step " << k;
    EXPECT_NEAR(lars.last_trust()[0], trust, 1e-6);
    EXPECT_EQ(lars.last_trust()[1], 1.0);
  }
  EXPECT_EQ(b.to_vector()[0], -8.f);
  EXPECT_EQ(lars.steps(), 2);
}

TEST(LARS, ZeroNormGivesTrustOneAndEpsEntersTheDenominator) {
  Tensor w = Tensor::from_vector({3, 4}, {1, 2});
  ParamArena arena{{{"w", w}}, ParamArena::Layout::given_order};
  LARSOptions o;
  o.lr = 0.5;
  o.momentum = 0;
  o.eps = 3;
  LARS lars(arena, o);
  w.grad().zero_();
  lars.step();  // ||g|| = 0: trust 1, and the step is lr * 0
  EXPECT_EQ(lars.last_trust()[0], 1.0);
  EXPECT_EQ(w.to_vector(), (std::vector<float>{3, 4}));
  w.grad().copy_(Tensor::from_vector({0, 2}, {1, 2}));
  lars.step();  // trust = 0.001 * 5 / (2 + 3), w -= 0.5 * 0.001 * g
  EXPECT_NEAR(lars.last_trust()[0], 0.001, 1e-9);
  EXPECT_NEAR(w.to_vector()[1], 4 - 0.5 * 0.001 * 2, 1e-6);
  EXPECT_EQ(w.to_vector()[0], 3.f);
}

TEST(LARS, StateRoundTripsAndRejectsBadOptions) {
  Tensor w = Tensor::from_vector({3, 4}, {1, 2});
  ParamArena arena{{{"w", w}}, ParamArena::Layout::given_order};
  LARS lars(arena, LARSOptions{});
  w.grad().copy_(Tensor::from_vector({1, 1}, {1, 2}));
  lars.step();
  const auto st = lars.state();
  LARS other(arena, LARSOptions{});
  other.load_state(st);
  EXPECT_EQ(other.steps(), 1);
  EXPECT_EQ(other.momentum_buffer().to_vector(), lars.momentum_buffer().to_vector());
  LARSOptions bad;
  bad.trust_coefficient = 0;
  EXPECT_THROW(LARS(arena, bad), Error);
}

}  // namespace
}  // namespace dplab
