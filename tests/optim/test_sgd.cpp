// SGD against PyTorch's update rule, worked out by hand (exact: every value is dyadic, so f32
// holds it exactly and the comparison is EXPECT_EQ).
//
// Setup: w = [2, 4] (weight decay on), b = [1] (weight decay off, as a bias would be);
// gradients at step k (0-based): g_w = [k + 1, -2], g_b = [4 - k]; lr = 1/2.
// Example, momentum 1/2, wd 1/4, step 0 for w[0]: g = 1 + 1/4 * 2 = 3/2, buf = g = 3/2,
// w = 2 - 1/2 * 3/2 = 5/4. Step 1: g = 2 + 1/4 * 5/4 = 37/16, buf = 1/2 * 3/2 + 37/16 = 49/16,
// w = 5/4 - 49/32 = -9/32. The remaining entries follow the same formulas (optim/sgd.h):
// dampening scales the new gradient by (1 - dampening) from step 1 on, Nesterov steps along
// g + momentum * buf.
#include <gtest/gtest.h>

#include <cstring>

#include "common/harness.h"
#include "dplab/core/safetensors.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

struct Fixture {
  Tensor w = Tensor::from_vector({2, 4}, {2});
  Tensor b = Tensor::from_vector({1}, {1});
  ParamArena arena{{{"w", w}, {"b", b}}, ParamArena::Layout::given_order};
  Fixture() {
    arena.set_weight_decay([](const ArenaSegment& s) { return s.name == "w"; });
  }
  void set_grads(int k) {
    w.grad().copy_(Tensor::from_vector({static_cast<float>(k + 1), -2.f}, {2}));
    b.grad().copy_(Tensor::from_vector({4.f - static_cast<float>(k)}, {1}));
  }
};

using Expected = std::vector<std::vector<float>>;  // per step: w0, w1, b0

void run_case(const SGDOptions& opt, const Expected& expected, const char* what) {
  Fixture f;
  SGD sgd(f.arena, opt);
  for (int k = 0; k < static_cast<int>(expected.size()); ++k) {
    f.set_grads(k);
    sgd.step();
    auto wv = f.w.to_vector(), bv = f.b.to_vector();
    EXPECT_EQ(wv[0], expected[k][0]) << what << " step " << k << " w[0]";
    EXPECT_EQ(wv[1], expected[k][1]) << what << " step " << k << " w[1]";
    EXPECT_EQ(bv[0], expected[k][2]) << what << " step " << k << " b[0]";
  }
  EXPECT_EQ(sgd.steps(), static_cast<int64_t>(expected.size()));
}

TEST(SGD, PlainStepsMatchHandComputed) {
  run_case({.lr = 0.5}, {{1.5f, 5.f, -1.f}, {0.5f, 6.f, -2.5f}, {-1.f, 7.f, -3.5f}}, "plain");
}

TEST(SGD, WeightDecayOnlyWhereSegmentFlagIsSet) {
  // b has no decay: its trajectory equals the plain case.
  run_case({.lr = 0.5, .weight_decay = 0.25},
           {{1.25f, 4.5f, -1.f}, {0.09375f, 4.9375f, -2.5f}, {-1.41796875f, 5.3203125f, -3.5f}},
           "weight decay");
}

TEST(SGD, MomentumFirstStepCopiesGradient) {
  run_case({.lr = 0.5, .momentum = 0.5, .weight_decay = 0.25},
           {{1.25f, 4.5f, -1.f}, {-0.28125f, 5.1875f, -3.5f}, {-2.51171875f, 5.8828125f, -5.75f}},
           "momentum");
}

TEST(SGD, Dampening) {
  run_case({.lr = 0.5, .momentum = 0.5, .dampening = 0.25, .weight_decay = 0.25},
           {{1.25f, 4.5f, -1.f},
            {0.0078125f, 5.078125f, -3.125f},
            {-1.739013671875f, 5.64111328125f, -4.9375f}},
           "dampening");
}

TEST(SGD, Nesterov) {
  run_case({.lr = 0.5, .momentum = 0.5, .weight_decay = 0.25, .nesterov = true},
           {{0.875f, 4.75f, -2.f},
            {-0.9765625f, 5.484375f, -4.75f},
            {-3.41455078125f, 6.1201171875f, -6.875f}},
           "nesterov");
}

TEST(SGD, RejectsNesterovWithoutMomentumOrWithDampening) {
  Fixture f;
  EXPECT_THROW(SGD(f.arena, {.lr = 0.1, .nesterov = true}), Error);
  EXPECT_THROW(SGD(f.arena, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
               Error);
  EXPECT_THROW(SGD(f.arena, {.lr = -1}), Error);
}

TEST(SGD, SetLrTakesEffectNextStep) {
  Fixture f;
  SGD sgd(f.arena, {.lr = 0.5});
  f.set_grads(0);
  sgd.set_lr(0.25);
  sgd.step();
  EXPECT_EQ(f.w.to_vector(), (std::vector<float>{1.75f, 4.5f}));
}

// A larger model-like arena with random gradients: resuming from state() (through a
// safetensors file, as a checkpoint does) continues bitwise identically.
TEST(SGD, StateRoundTripGivesBitwiseResume) {
  auto make_params = [] {
    return std::vector<NamedTensor>{{"a.weight", test::random_tensor({7, 5}, 1)},
                                    {"a.bias", test::random_tensor({7}, 2)},
                                    {"b.weight", test::random_tensor({3, 7}, 3)}};
  };
  const SGDOptions opt{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 1e-3};
  auto grads_for = [](ParamArena& arena, int k) {
    for (auto& s : arena.segments())
      s.param.grad().copy_(test::random_tensor(s.shape, 100 + k * 7 + s.offset));
  };
  // Uninterrupted: 5 steps.
  auto p1 = make_params();
  ParamArena a1(p1);
  a1.set_weight_decay([](const ArenaSegment& s) { return s.shape.size() > 1; });
  SGD s1(a1, opt);
  for (int k = 0; k < 5; ++k) {
    grads_for(a1, k);
    s1.step();
  }
  // Interrupted after 2 steps; the state goes through a file.
  auto p2 = make_params();
  ParamArena a2(p2);
  a2.set_weight_decay([](const ArenaSegment& s) { return s.shape.size() > 1; });
  SGD s2(a2, opt);
  for (int k = 0; k < 2; ++k) {
    grads_for(a2, k);
    s2.step();
  }
  const std::string path = testing::TempDir() + "/sgd_state.safetensors";
  auto st = s2.state();
  st.push_back({"params", a2.params()});
  save_safetensors(path, st);

  auto p3 = make_params();
  ParamArena a3(p3);
  a3.set_weight_decay([](const ArenaSegment& s) { return s.shape.size() > 1; });
  SGD s3(a3, opt);
  std::vector<NamedTensor> loaded = load_safetensors(path), optim_state;
  for (auto& nt : loaded) {
    if (nt.name == "params")
      Tensor(a3.params()).copy_(nt.tensor);
    else
      optim_state.push_back(nt);
  }
  s3.load_state(optim_state);
  EXPECT_EQ(s3.steps(), 2);
  for (int k = 2; k < 5; ++k) {
    grads_for(a3, k);
    s3.step();
  }
  ASSERT_EQ(a1.params().numel(), a3.params().numel());
  EXPECT_EQ(0, std::memcmp(a1.params().raw_data(), a3.params().raw_data(), a1.params().nbytes()));
  EXPECT_EQ(0, std::memcmp(s1.momentum_buffer().raw_data(), s3.momentum_buffer().raw_data(),
                           s1.momentum_buffer().nbytes()));
}

TEST(SGD, LoadStateRejectsWrongShapesAndKeys) {
  Fixture f;
  SGD sgd(f.arena, {.lr = 0.1, .momentum = 0.9});
  EXPECT_THROW(sgd.load_state({{"optim.steps", Tensor::from_vector_i64({3}, {})},
                               {"optim.momentum_buffer", Tensor::zeros({5})}}),
               Error);
  EXPECT_THROW(sgd.load_state({{"optim.steps", Tensor::from_vector_i64({3}, {})},
                               {"optim.other", Tensor::zeros({1})}}),
               Error);
  EXPECT_THROW(sgd.load_state({{"optim.momentum_buffer", sgd.momentum_buffer().clone()}}), Error);
}

}  // namespace
}  // namespace dplab
