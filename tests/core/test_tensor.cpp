#include <gtest/gtest.h>

#include <tuple>

#include "common/harness.h"
#include "dplab/core/param_arena.h"

namespace dplab {
namespace {

TEST(Tensor, ContiguousStridesAndViews) {
  Tensor t = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_TRUE(t.is_contiguous());
  Tensor tt = t.transpose(0, 1);
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.contiguous().to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.slice(1, 1, 3).contiguous().to_vector(), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(t.select(0, 1).to_vector(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(t.view({3, -1}).shape(), (Shape{3, 2}));
  EXPECT_THROW(tt.view({6}), Error);
  EXPECT_THROW(t.view({4, -1}), Error);
}

TEST(Tensor, HostMemoryIs64ByteAligned) {
  for (int n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

TEST(Tensor, AllDtypesRoundTrip) {
  std::vector<float> v = {0, 1, -2, 3.5f, 100};
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    Tensor x = Tensor::from_vector(v, {5}, t);
    auto back = x.to_vector();
    if (t == DType::i32 || t == DType::i64) {
      EXPECT_EQ(back[3], 3.0f);
    } else {
      EXPECT_EQ(back, v) << dtype_name(t);
    }
  }
  Tensor u = Tensor::from_vector({0, 255}, {2}, DType::u8);
  EXPECT_EQ(u.to_vector(), (std::vector<float>{0, 255}));
}

TEST(Tensor, HalfConversionsRoundToNearestEven) {
  // bf16: 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  // f16: max finite 65504, overflow to inf, smallest subnormal 2^-24.
  EXPECT_EQ(f16_to_f32(f32_to_f16(65504.f)), 65504.f);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(70000.f))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.9604644775390625e-08f)), 5.9604644775390625e-08f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)), 1.0f);  // tie to even
  EXPECT_EQ(f16_to_f32(f32_to_f16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  // every f16 value survives f16 -> f32 -> f16
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    float f = f16_to_f32(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), b) << h;
  }
}

TEST(Philox, KnownAnswerAndIndependentOfOrder) {
  // Random123 known-answer test: philox4x32-10, counter 0, key 0.
  Philox4 r = philox4x32(0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  PhiloxStream a(7, 1), b(7, 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
  for (int i = 0; i < 1000; ++i) EXPECT_LT(a.below(7), 7u);
}

TEST(Autograd, AddAccumulatesAndFiresHooksOnce) {
  Tensor a = test::random_tensor({3}, 1).set_requires_grad(true);
  Tensor b = test::random_tensor({3}, 2).set_requires_grad(true);
  int fired = 0;
  a.register_grad_ready_hook([&](const Tensor&) { ++fired; });
  // y = (a + b) + a: a receives two contributions, hook fires once after both.
  Tensor y = add(add(a, b), a);
  backward(y, Tensor::ones({3}));
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(b.grad().to_vector(), (std::vector<float>{1, 1, 1}));
  // second pass accumulates
  Tensor y2 = add(a, b);
  backward(y2, Tensor::ones({3}));
  EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(fired, 2);
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor a = test::random_tensor({3}, 1).set_requires_grad(true);
  NoGradGuard ng;
  Tensor y = add(a, a);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(ParamArena, ParametersBecomeViewsInReadyOrder) {
  Tensor w = test::random_tensor({2, 3}, 1);
  Tensor b = test::random_tensor({3}, 2);
  auto wv = w.to_vector();
  ParamArena arena({{"fc.weight", w}, {"fc.bias", b}});
  ASSERT_EQ(arena.segments().size(), 2u);
  EXPECT_EQ(arena.segments()[0].name, "fc.bias");  // reverse of registration
  EXPECT_EQ(arena.segments()[1].name, "fc.weight");
  EXPECT_EQ(w.to_vector(), wv);  // values preserved
  EXPECT_EQ(w.storage().get(), arena.params().storage().get());
  EXPECT_TRUE(arena.segments()[0].lars_excluded);
  EXPECT_FALSE(arena.segments()[1].lars_excluded);
  // gradients land in the arena
  Tensor y = add(w, w);
  backward(y, Tensor::ones({2, 3}));
  auto g = arena.grads().to_vector();
  const auto& ws = arena.segment("fc.weight");
  for (int64_t i = 0; i < ws.numel; ++i) EXPECT_EQ(g[ws.offset + i], 2.0f);
  arena.zero_grad();
  EXPECT_EQ(w.grad().to_vector(), std::vector<float>(6, 0.f));
}

// Segments at offsets 0 (16 values, decayed), 16 (16, decayed), 32 (5, not), 48 (3, not: 37
// rounds up to 48 with 16-value alignment) and 64 (16, decayed): the first two are adjacent
// with one flag (one run); the third and fourth share a flag but padding lies between them.
TEST(ParamArena, DecayRunsJoinAdjacentSegmentsWithOneFlag) {
  ParamArena arena({{"a", Tensor::zeros({16})},
                    {"b", Tensor::zeros({4, 4})},
                    {"c", Tensor::zeros({5})},
                    {"d", Tensor::zeros({3})},
                    {"e", Tensor::zeros({16})}},
                   ParamArena::Layout::given_order, 16);
  arena.set_weight_decay([](const ArenaSegment& s) { return s.name != "c" && s.name != "d"; });
  const std::vector<DecayRun> r = arena.decay_runs();
  ASSERT_EQ(r.size(), 4u);
  const std::vector<std::tuple<int64_t, int64_t, bool>> want = {
      {0, 32, true}, {32, 5, false}, {48, 3, false}, {64, 16, true}};
  for (size_t i = 0; i < r.size(); ++i)
    EXPECT_EQ(std::make_tuple(r[i].offset, r[i].numel, r[i].weight_decay), want[i]) << i;
  arena.set_weight_decay([](const ArenaSegment&) { return true; });
  EXPECT_EQ(arena.decay_runs().size(), 3u);  // the padding after c and after d still splits
}

TEST(GradCheck, AddPasses) {
  Tensor a = test::random_tensor({4, 3}, 1).set_requires_grad(true);
  Tensor b = test::random_tensor({4, 3}, 2).set_requires_grad(true);
  test::expect_gradients_match([](const std::vector<Tensor>& in) { return add(in[0], in[1]); },
                               {a, b});
}

}  // namespace
}  // namespace dplab
