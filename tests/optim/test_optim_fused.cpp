// The fused LARS and DC-S3GD kernels (core/kernels/optim.h): the fast CPU kernels against the
// reference loops, the fused LARS step against the composition of ops LARS used before the
// kernels existed (bit for bit), and the CUDA kernels against ref when a device exists.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <cmath>
#include <cstring>

#include "common/harness.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/reduce.h"
#include "dplab/optim/lars.h"

namespace dplab {
namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

// Sizes: tiny, odd, and one above every OpenMP threshold (32768 and 65536).
const std::vector<int64_t> kSizes = {1, 17, 1000, 70001};

std::vector<LarsStepArgs> lars_cases() {
  std::vector<LarsStepArgs> cases;
  LarsStepArgs a;
  a.lr = 0.4;
  a.momentum = 0.9f;
  a.weight_decay = 5e-4;
  a.eta = 0.02;
  a.first_step = true;
  cases.push_back(a);
  a.first_step = false;
  cases.push_back(a);
  a.excluded = true;
  cases.push_back(a);
  a.excluded = false;
  a.momentum = 0.f;
  a.weight_decay = 0.0;
  a.eps = 1e-3;
  cases.push_back(a);
  return cases;
}

TEST(OptimFused, LarsNormsCpuAndRefEqualTheL2NormOp) {
  for (int64_t n : kSizes) {
    Tensor p = test::random_tensor({n}, 1 + n), g = test::random_tensor({n}, 2 + n, -0.01f, 0.01f);
    for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
      Tensor norms = Tensor::zeros({2});
      be->optim.lars_norms(p, g, norms);
      const auto nm = norms.to_vector();
      const float wn = float(std::sqrt(be->reduce.sum_of_squares(p)));
      const float gn = float(std::sqrt(be->reduce.sum_of_squares(g)));
      EXPECT_EQ(nm[0], wn) << be->name << " n=" << n;
      EXPECT_EQ(nm[1], gn) << be->name << " n=" << n;
      if (be == &cpu_backend()) {  // the op LARS used before: the same bits
        EXPECT_EQ(nm[0], l2_norm(p).item()) << "n=" << n;
        EXPECT_EQ(nm[1], l2_norm(g).item()) << "n=" << n;
      }
    }
    Tensor nr = Tensor::zeros({2}), nc = Tensor::zeros({2});
    ref_backend().optim.lars_norms(p, g, nr);
    cpu_backend().optim.lars_norms(p, g, nc);
    test::expect_close(nc, nr, 1e-12, "lars norms cpu vs ref");
  }
}

TEST(OptimFused, LarsStepCpuMatchesRefBitwise) {
  const auto cases = lars_cases();
  for (int64_t n : kSizes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor p0 = test::random_tensor({n}, 3 + n), g = test::random_tensor({n}, 4 + n);
      Tensor b0 = test::random_tensor({n}, 5 + n);
      Tensor norms = Tensor::from_vector({1.5f, 0.25f}, {2});
      Tensor p_ref = p0.clone(), b_ref = b0.clone(), p_cpu = p0.clone(), b_cpu = b0.clone();
      ref_backend().optim.lars_step(p_ref, g, b_ref, norms, cases[c]);
      cpu_backend().optim.lars_step(p_cpu, g, b_cpu, norms, cases[c]);
      EXPECT_TRUE(bitwise_equal(p_ref, p_cpu)) << "params n=" << n << " case " << c;
      EXPECT_TRUE(bitwise_equal(b_ref, b_cpu)) << "buffer n=" << n << " case " << c;
      EXPECT_FALSE(bitwise_equal(p_ref, p0)) << "the step changed nothing, case " << c;
    }
  }
}

TEST(OptimFused, LarsStepSpotValue) {
  // w = 3, g = 4, norms 3 and 4, eta 0.5, lr 2, wd 0.25, momentum 0.5, buffer 1:
  // trust = 0.5 * 3 / (4 + 0.75) = 6/19, c = 12/19; v = 0.5 + c * (4 + 0.75) = 3.5; w = -0.5.
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::from_vector({3}, {1}), g = Tensor::from_vector({4}, {1});
    Tensor b = Tensor::from_vector({1}, {1}), norms = Tensor::from_vector({3, 4}, {2});
    LarsStepArgs a;
    a.lr = 2;
    a.momentum = 0.5f;
    a.weight_decay = 0.25;
    a.eta = 0.5;
    be->optim.lars_step(p, g, b, norms, a);
    EXPECT_NEAR(b.item(), 3.5f, 1e-6) << be->name;
    EXPECT_NEAR(p.item(), -0.5f, 1e-6) << be->name;
  }
}

TEST(OptimFused, LarsStepRejectsBadOperands) {
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::zeros({4}), g = Tensor::zeros({4}), b = Tensor::zeros({4});
    Tensor norms3 = Tensor::zeros({3}), none;
    LarsStepArgs a;
    a.momentum = 0.9f;  // needs a buffer
    EXPECT_THROW(be->optim.lars_step(p, g, b, norms3, a), Error) << be->name;
    EXPECT_THROW(be->optim.lars_step(p, g, none, Tensor::zeros({2}), a), Error) << be->name;
    EXPECT_THROW(be->optim.lars_norms(p, Tensor::zeros({5}), norms3), Error) << be->name;
  }
}

// The LARS step as it was composed from ops before the fused kernels: l2_norm of w and g, the
// trust in double, g scaled by f32(lr * trust), then sgd_step with lr 1 and wd f32(c * wd).
void composed_lars_step(const ParamArena& arena, Tensor& buf, const LARSOptions& o, bool first) {
  NoGradGuard no_grad;
  for (const ArenaSegment& s : arena.segments()) {
    const double wd = s.weight_decay ? o.weight_decay : 0.0;
    Tensor p = arena.params().flat_range(s.offset, s.offset + s.numel);
    Tensor g = arena.grads().flat_range(s.offset, s.offset + s.numel);
    double trust = 1.0;
    if (!s.lars_excluded) {
      const double wn = l2_norm(p).item(), gn = l2_norm(g).item();
      if (wn > 0 && gn > 0) trust = o.trust_coefficient * wn / (gn + wd * wn + o.eps);
    }
    const double c = o.lr * trust;
    SgdStepArgs a;
    a.lr = 1.f;
    a.momentum = static_cast<float>(o.momentum);
    a.weight_decay = static_cast<float>(c * wd);
    a.first_step = first;
    Tensor gs = mul_scalar(g, static_cast<float>(c));
    Tensor b = buf.flat_range(s.offset, s.offset + s.numel);
    cpu_backend().optim.sgd_step(p, gs, b, a);
  }
}

TEST(OptimFused, LarsStepEqualsTheComposedOpsBitForBit) {
  auto make = [](std::vector<Tensor>& ts) {
    ts = {test::random_tensor({16, 8, 3, 3}, 7), test::random_tensor({16}, 8),
          test::random_tensor({70007}, 9).view({7, 10001}), test::random_tensor({10}, 10)};
    std::vector<NamedTensor> named;
    for (size_t i = 0; i < ts.size(); ++i) named.push_back({fmt::format("t{}", i), ts[i]});
    return named;
  };
  std::vector<Tensor> ta, tb;
  ParamArena a{make(ta), ParamArena::Layout::given_order};
  ParamArena b{make(tb), ParamArena::Layout::given_order};
  for (ParamArena* ar : {&a, &b})
    ar->set_weight_decay([](const ArenaSegment& s) { return s.name != "t3"; });
  LARSOptions o;
  o.lr = 0.8;
  o.momentum = 0.9;
  o.weight_decay = 1e-3;
  o.trust_coefficient = 0.01;
  o.eps = 1e-9;
  LARS lars(a, o);
  Tensor buf = Tensor::zeros({b.numel()});
  for (int step = 0; step < 3; ++step) {
    Tensor g = test::random_tensor({a.numel()}, 100 + step, -0.1f, 0.1f);
    for (ParamArena* ar : {&a, &b}) {
      Tensor grads = ar->grads();  // a handle on the arena's gradient storage
      grads.copy_(g);
    }
    lars.step();
    composed_lars_step(b, buf, o, step == 0);
    ASSERT_TRUE(bitwise_equal(a.params(), b.params())) << "step " << step;
    ASSERT_TRUE(bitwise_equal(lars.momentum_buffer(), buf)) << "step " << step;
  }
  EXPECT_NE(lars.last_trust()[0], 1.0);
  EXPECT_EQ(lars.last_trust()[1], 1.0);  // 1-d: excluded
}

struct Dcs3gdOperands {
  Tensor wbar, r, w, g, v, s;
  explicit Dcs3gdOperands(int64_t n)
      : wbar(test::random_tensor({n}, 11 + n)),
        r(test::random_tensor({n}, 12 + n, -0.05f, 0.05f)),
        w(test::random_tensor({n}, 13 + n)),
        g(test::random_tensor({n}, 14 + n, -0.5f, 0.5f)),
        v(test::random_tensor({n}, 15 + n, -0.01f, 0.01f)),
        s(Tensor::zeros({n})) {}
  Dcs3gdOperands clone_to(Device d) const {
    Dcs3gdOperands o(*this);
    for (Tensor* t : {&o.wbar, &o.r, &o.w, &o.g, &o.v, &o.s}) *t = t->to(d).clone();
    return o;
  }
};

// One whole DC-S3GD step (both passes) and a drain on `be`; returns the 4 sums.
std::vector<double> dcs3gd_step(const Backend& be, Dcs3gdOperands& o, bool have_r) {
  Tensor sums = Tensor::zeros({4}, DType::i64, o.wbar.device());
  Tensor s3 = sums.flat_range(0, 3), s1 = sums.flat_range(3, 4);
  be.optim.dcs3gd_average(o.wbar, have_r ? o.r : Tensor(), o.w, o.g, {4.f, have_r}, s3);
  const Dcs3gdUpdate up{0.3f, 0.05f, 0.9f, 1e-4f};
  be.optim.dcs3gd_update(o.g, o.wbar, o.w, o.v, o.s, up, s1, Tensor());
  return f64_slot_values(sums);
}

TEST(OptimFused, Dcs3gdCpuMatchesRef) {
  for (int64_t n : kSizes) {
    for (bool have_r : {false, true}) {
      const Dcs3gdOperands base(n);
      Dcs3gdOperands a = base.clone_to(Device::cpu()), b = base.clone_to(Device::cpu());
      const auto sa = dcs3gd_step(ref_backend(), a, have_r);
      const auto sb = dcs3gd_step(cpu_backend(), b, have_r);
      for (auto [x, y, what] : {std::tuple{&a.wbar, &b.wbar, "W̄"},
                                {&a.w, &b.w, "W"},
                                {&a.v, &b.v, "V"},
                                {&a.s, &b.s, "S"}})
        EXPECT_TRUE(bitwise_equal(*x, *y)) << what << " n=" << n << " have_r=" << have_r;
      EXPECT_TRUE(bitwise_equal(a.s, a.v));  // S = Δw = v
      EXPECT_EQ(bitwise_equal(a.wbar, base.wbar), !have_r) << "W̄ moves only with R";
      for (int k = 0; k < 4; ++k) {
        EXPECT_GT(sa[k], 0.0) << k;
        if (n < 32768)  // below the OpenMP threshold both sum in index order
          EXPECT_EQ(sa[k], sb[k]) << "sum " << k << " n=" << n;
        else
          EXPECT_NEAR(sa[k], sb[k], 1e-12 * sa[k]) << "sum " << k << " n=" << n;
      }
      Dcs3gdOperands c = base.clone_to(Device::cpu()), d = base.clone_to(Device::cpu());
      ref_backend().optim.dcs3gd_drain(c.wbar, c.r, c.w, 4.f);
      cpu_backend().optim.dcs3gd_drain(d.wbar, d.r, d.w, 4.f);
      EXPECT_TRUE(bitwise_equal(c.wbar, d.wbar) && bitwise_equal(c.w, d.w)) << "drain n=" << n;
      EXPECT_TRUE(bitwise_equal(c.w, c.wbar)) << "drain leaves W = W̄";
    }
  }
}

TEST(OptimFused, Dcs3gdSpotValues) {
  // W̄ = 1, R = 2, N = 4, W = 0.5, g = 2: W̄ = 1.5, D = 1, g⊙g⊙D = 4; sums 4, 16, 1.
  // λ 0.25, lr 0.5, μ 0.5, wd 0, V = 1: g̃ = 3, V = 0.5 - 1.5 = -1, W = 0.5, S = -1.
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor wbar = Tensor::from_vector({1}, {1}), r = Tensor::from_vector({2}, {1});
    Tensor w = Tensor::from_vector({0.5f}, {1}), g = Tensor::from_vector({2}, {1});
    Tensor v = Tensor::from_vector({1}, {1}), s = Tensor::zeros({1});
    Tensor sums = Tensor::zeros({3}, DType::i64), sq = Tensor::zeros({1}, DType::i64);
    be->optim.dcs3gd_average(wbar, r, w, g, {4.f, true}, sums);
    EXPECT_EQ(f64_slot_values(sums), (std::vector<double>{4, 16, 1})) << be->name;
    be->optim.dcs3gd_update(g, wbar, w, v, s, Dcs3gdUpdate{0.25f, 0.5f, 0.5f, 0.f}, sq, Tensor());
    EXPECT_EQ(v.item(), -1.f) << be->name;
    EXPECT_EQ(w.item(), 0.5f) << be->name;
    EXPECT_EQ(s.item(), -1.f) << be->name;
    EXPECT_EQ(f64_slot_values(sq)[0], 2.25) << be->name;
  }
}

// λ of eq. 17 from the pass-1 sums (dcs3gd_lambda) and the update reading it from a tensor.
TEST(OptimFused, Dcs3gdLambdaFromSums) {
  // Tensor j: Σg² = g2[j], Σ(g⊙g⊙D)² = c2[j]; the 3rd and 4th slots are not read.
  const std::vector<double> g2 = {4, 9, 0.25}, c2 = {16, 0, 1};
  Tensor sums = Tensor::zeros({12}, DType::i64);
  for (int j = 0; j < 3; ++j) {
    set_f64_slot(sums, 4 * j, g2[size_t(j)]);
    set_f64_slot(sums, 4 * j + 1, c2[size_t(j)]);
    set_f64_slot(sums, 4 * j + 2, 123.0);
  }
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor lam = Tensor::full({3}, -1.f);
    Dcs3gdLambdaArgs a;
    a.lambda0 = 0.2;
    be->optim.dcs3gd_lambda(sums, a, lam);  // 0.2·2/4, 0 (no denominator), 0.2·0.5/1
    EXPECT_EQ(lam.to_vector(), (std::vector<float>{float(0.2 * 2 / 4), 0.f, float(0.2 * 0.5 / 1)}))
        << be->name;
    a.global = true;  // 0.2·sqrt(13.25)/sqrt(17) for every tensor
    be->optim.dcs3gd_lambda(sums, a, lam);
    const float l = float(0.2 * std::sqrt(13.25) / std::sqrt(17.0));
    EXPECT_EQ(lam.to_vector(), (std::vector<float>{l, l, l})) << be->name;
    a.correct = false;
    be->optim.dcs3gd_lambda(sums, a, lam);
    EXPECT_EQ(lam.to_vector(), (std::vector<float>{0.f, 0.f, 0.f})) << be->name;
    // The update takes λ from the tensor when one is given (the spot values of the test above).
    Tensor wbar = Tensor::from_vector({1.5f}, {1}), w = Tensor::from_vector({0.5f}, {1});
    Tensor g = Tensor::from_vector({2}, {1}), v = Tensor::from_vector({1}, {1});
    Tensor s = Tensor::zeros({1}), sq = Tensor::zeros({1}, DType::i64);
    be->optim.dcs3gd_update(g, wbar, w, v, s, Dcs3gdUpdate{99.f, 0.5f, 0.5f, 0.f}, sq,
                            Tensor::from_vector({0.25f}, {1}));
    EXPECT_EQ(v.item(), -1.f) << be->name;
    Tensor two = Tensor::zeros({2});  // 8 slots expected, 12 given
    EXPECT_THROW(be->optim.dcs3gd_lambda(sums, a, two), Error);
  }
}

// CUDA twins: the same steps on the device against ref. Element updates use the same functors
// (compiled without FMA contraction), so with the same norms they agree bit for bit; the
// reductions sum in a different (tree) order, so sums and norms agree to rounding.
TEST(OptimFusedCuda, LarsMatchesRef) {
  DPLAB_CUDA_TEST_GATE();
  const Device dev = Device::cuda(0);
  const auto cases = lars_cases();
  for (int64_t n : kSizes) {
    Tensor p0 = test::random_tensor({n}, 3 + n), g = test::random_tensor({n}, 4 + n);
    Tensor b0 = test::random_tensor({n}, 5 + n);
    Tensor nr = Tensor::zeros({2}), nd = Tensor::zeros({2}, DType::f32, dev);
    ref_backend().optim.lars_norms(p0, g, nr);
    cuda_backend().optim.lars_norms(p0.to(dev), g.to(dev), nd);
    test::expect_close(nd.to(Device::cpu()), nr, 1e-12, "cuda lars norms");
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor p_ref = p0.clone(), b_ref = b0.clone();
      Tensor p_dev = p0.to(dev).clone(), b_dev = b0.to(dev).clone(), g_dev = g.to(dev);
      ref_backend().optim.lars_step(p_ref, g, b_ref, nr, cases[c]);
      cuda_backend().optim.lars_step(p_dev, g_dev, b_dev, nr.to(dev), cases[c]);
      EXPECT_TRUE(bitwise_equal(p_dev, p_ref)) << "params n=" << n << " case " << c;
      EXPECT_TRUE(bitwise_equal(b_dev, b_ref)) << "buffer n=" << n << " case " << c;
    }
  }
  for (int64_t n : kSizes) {  // the sgd kernel too
    Tensor p0 = test::random_tensor({n}, 6 + n), g = test::random_tensor({n}, 7 + n);
    Tensor b0 = test::random_tensor({n}, 8 + n);
    SgdStepArgs a{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true};
    Tensor p_ref = p0.clone(), b_ref = b0.clone();
    Tensor p_dev = p0.to(dev).clone(), b_dev = b0.to(dev).clone();
    ref_backend().optim.sgd_step(p_ref, g, b_ref, a);
    cuda_backend().optim.sgd_step(p_dev, g.to(dev), b_dev, a);
    EXPECT_TRUE(bitwise_equal(p_dev, p_ref) && bitwise_equal(b_dev, b_ref)) << "sgd n=" << n;
  }
}

TEST(OptimFusedCuda, Dcs3gdMatchesRef) {
  DPLAB_CUDA_TEST_GATE();
  for (int64_t n : kSizes) {
    for (bool have_r : {false, true}) {
      const Dcs3gdOperands base(n);
      Dcs3gdOperands a = base.clone_to(Device::cpu()), b = base.clone_to(Device::cuda(0));
      const auto sa = dcs3gd_step(ref_backend(), a, have_r);
      const auto sb = dcs3gd_step(cuda_backend(), b, have_r);
      for (auto [x, y, what] : {std::tuple{&a.wbar, &b.wbar, "W̄"},
                                {&a.w, &b.w, "W"},
                                {&a.v, &b.v, "V"},
                                {&a.s, &b.s, "S"}})
        EXPECT_TRUE(bitwise_equal(*x, *y)) << what << " n=" << n << " have_r=" << have_r;
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(sa[k], sb[k], 1e-12 * sa[k]) << k << " n=" << n;
      Dcs3gdOperands c = base.clone_to(Device::cpu()), d = base.clone_to(Device::cuda(0));
      ref_backend().optim.dcs3gd_drain(c.wbar, c.r, c.w, 4.f);
      cuda_backend().optim.dcs3gd_drain(d.wbar, d.r, d.w, 4.f);
      EXPECT_TRUE(bitwise_equal(c.wbar, d.wbar) && bitwise_equal(c.w, d.w)) << "drain n=" << n;
    }
  }
}

}  // namespace
}  // namespace dplab
