// The fused optimizer kernels on cuda:0 against the reference loops: SGD (momentum, dampening,
// Nesterov, masked weight decay) kernel by kernel and through the SGD optimizer over a
// ParamArena; LARS through its optimizer (device norms feed the device update); the DC-S3GD
// passes. Element updates run the same core/optim_functors.h functors (CUDA compiled without FMA
// contraction), so they must agree bit for bit; reductions (norms, DC-S3GD sums) sum in a
// different order and agree to rounding. Skipped, with the reason, when no device is visible.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <cmath>
#include <cstring>

#include "common/harness.h"
#include "common/optim_runs.h"
#include "dplab/optim/lars.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

#define DPLAB_REQUIRE_CUDA() DPLAB_CUDA_TEST_GATE();

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()).contiguous(), hb = b.to(Device::cpu()).contiguous();
  return ha.dtype() == hb.dtype() && ha.nbytes() == hb.nbytes() &&
         std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

// Odd sizes and sizes spanning many blocks.
const std::vector<int64_t> kSizes = {1, 17, 1000, 70001};

TEST(CudaOptim, SgdStepMatchesRefBitwise) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  const std::vector<SgdStepArgs> cases = {
      {.lr = 0.1f},
      {.lr = 0.1f, .weight_decay = 1e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .first_step = true},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .dampening = 0.3f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true},
      {.lr = 0.05f, .momentum = 0.9f, .nesterov = true, .first_step = true},
  };
  for (int64_t n : kSizes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const SgdStepArgs& a = cases[c];
      const Tensor p0 = test::random_tensor({n}, 10 + n), g = test::random_tensor({n}, 20 + n);
      const Tensor b0 = test::random_tensor({n}, 30 + n);
      Tensor p_ref = p0.clone(), b_ref = b0.clone();
      Tensor p_dev = p0.to(dev), b_dev = b0.to(dev);
      ref_backend().optim.sgd_step(p_ref, g, b_ref, a);
      cuda_backend().optim.sgd_step(p_dev, g.to(dev), b_dev, a);
      EXPECT_TRUE(bitwise_equal(p_dev, p_ref)) << "params, n=" << n << " case " << c;
      EXPECT_TRUE(bitwise_equal(b_dev, b_ref)) << "buffer, n=" << n << " case " << c;
      EXPECT_FALSE(bitwise_equal(p_dev, p0)) << "the step changed nothing, case " << c;
    }
  }
  // Without momentum the buffer may be undefined.
  Tensor p = test::random_tensor({33}, 1).to(dev), none;
  EXPECT_NO_THROW(
      cuda_backend().optim.sgd_step(p, test::random_tensor({33}, 2).to(dev), none, {.lr = 0.1f}));
}

// The skip flags decided on the device (CPU twin: OptimKernels.SkipFlagsDropTheStep).
TEST(CudaOptim, SkipFlagsDropTheStep) {
  DPLAB_REQUIRE_CUDA();
  test::check_skip_flags_drop_the_step(cuda_backend(), Device::cuda(0));
}

// The multi-tensor steps on cuda:0, against the ref step on each run (CPU twins:
// OptimKernels.SgdStepRunsEqualsTheStepOnEachRun and AdamwStepRunsEqualsTheStepOnEachRun).
// 70 runs of the hand layout's first run cut in pieces: more than one launch's 64.
TEST(CudaOptim, StepRunsMatchTheRefStepOnEachRun) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  test::RunLayout l;
  for (int k = 0; k < 70; ++k) l.runs.push_back({60000 + 500 * k, 500, k % 3 != 0});
  l.runs.front() = {60000 + 35000, 5000, true};  // the rest of the arena's end
  const Tensor p0 = test::random_tensor({l.kN}, 1), g = test::random_tensor({l.kN}, 2);
  const Tensor s0 = test::random_tensor({l.kN}, 3, 0.f, 0.01f);
  const SgdStepArgs sa{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = true};
  Tensor p_ref = p0.clone(), b_ref = s0.clone(), unused = s0.clone();
  test::per_run(l, p_ref, g, b_ref, unused,
                [&](Tensor& p, const Tensor& gr, Tensor& b, Tensor&, bool wd) {
                  SgdStepArgs one = sa;
                  if (!wd) one.weight_decay = 0.f;
                  ref_backend().optim.sgd_step(p, gr, b, one);
                });
  Tensor p = p0.to(dev), b = s0.to(dev);
  cuda_backend().optim.sgd_step_runs(p, g.to(dev), b, l.runs, sa, Tensor());
  EXPECT_TRUE(bitwise_equal(p, p_ref)) << "SGD params";
  EXPECT_TRUE(bitwise_equal(b, b_ref)) << "SGD buffer";

  const AdamWStepArgs aa{.lr = 1e-3, .weight_decay = 0.01, .step = 3};
  Tensor pa_ref = p0.clone(), m_ref = s0.clone(), v_ref = s0.clone();
  test::per_run(l, pa_ref, g, m_ref, v_ref,
                [&](Tensor& p, const Tensor& gr, Tensor& m, Tensor& v, bool wd) {
                  AdamWStepArgs one = aa;
                  if (!wd) one.weight_decay = 0.0;
                  ref_backend().optim.adamw_step(p, gr, m, v, one);
                });
  Tensor pa = p0.to(dev), m = s0.to(dev), v = s0.to(dev);
  cuda_backend().optim.adamw_step_runs(pa, g.to(dev), m, v, l.runs, aa, Tensor());
  EXPECT_TRUE(bitwise_equal(pa, pa_ref)) << "AdamW params";
  EXPECT_TRUE(bitwise_equal(m, m_ref)) << "AdamW exp_avg";
  EXPECT_TRUE(bitwise_equal(v, v_ref)) << "AdamW exp_avg_sq";
}

// Multi-tensor LARS on cuda:0 over 70 runs (two launches of each kernel), run 2 excluded: the
// norms have the bits of the single-tensor CUDA kernel on each run (the same reduction grid);
// the excluded pair stays as it was; the update equals ref's lars_step per run given the same
// norms (CPU twin: OptimKernels.LarsStepRunsEqualsTheStepOnEachRun).
TEST(CudaOptim, LarsStepRunsMatchTheSingleTensorKernels) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  test::RunLayout l;
  for (int k = 0; k < 70; ++k) l.runs.push_back({60000 + 500 * k, 500, k % 3 != 0});
  l.runs.front() = {60000 + 35000, 5000, true};
  l.runs[2].excluded = true;
  const int64_t k = int64_t(l.runs.size());
  const Tensor p0 = test::random_tensor({l.kN}, 8), g = test::random_tensor({l.kN}, 9, -0.1f, 0.1f);
  const Tensor b0 = test::random_tensor({l.kN}, 10);
  const Tensor pd = p0.to(dev), gd = g.to(dev);
  Tensor n_one = Tensor::full({2 * k}, -1.0, DType::f32, dev);
  for (int64_t i = 0; i < k; ++i) {
    const OptimRun& r = l.runs[size_t(i)];
    if (r.excluded) continue;
    Tensor nr = n_one.flat_range(2 * i, 2 * i + 2);
    cuda_backend().optim.lars_norms(pd.flat_range(r.offset, r.offset + r.numel),
                                    gd.flat_range(r.offset, r.offset + r.numel), nr);
  }
  Tensor n = Tensor::full({2 * k}, -1.0, DType::f32, dev);
  cuda_backend().optim.lars_norms_runs(pd, gd, l.runs, n);
  EXPECT_TRUE(bitwise_equal(n, n_one)) << "norms";
  EXPECT_EQ(n.to(Device::cpu()).to_vector()[4], -1.f) << "the excluded run's pair was written";

  const LarsStepArgs a{.lr = 0.5, .momentum = 0.9f, .weight_decay = 1e-4, .eta = 0.02};
  const Tensor n_host = n.to(Device::cpu());
  Tensor p_ref = p0.clone(), b_ref = b0.clone();
  for (int64_t i = 0; i < k; ++i) {
    const OptimRun& r = l.runs[size_t(i)];
    const int64_t lo = r.offset, hi = lo + r.numel;
    Tensor pr = p_ref.flat_range(lo, hi), br = b_ref.flat_range(lo, hi);
    LarsStepArgs one = a;
    one.weight_decay = r.weight_decay ? a.weight_decay : 0.0;
    one.excluded = r.excluded;
    ref_backend().optim.lars_step(pr, g.flat_range(lo, hi), br, n_host.flat_range(2 * i, 2 * i + 2),
                                  one);
  }
  Tensor p = p0.to(dev), b = b0.to(dev);
  cuda_backend().optim.lars_step_runs(p, gd, b, n, l.runs, a, Tensor());
  EXPECT_TRUE(bitwise_equal(p, p_ref)) << "params";
  EXPECT_TRUE(bitwise_equal(b, b_ref)) << "buffer";
}

TEST(CudaOptim, SgdRejectsOperandsOnTheWrongDevice) {
  DPLAB_REQUIRE_CUDA();
  Tensor p = Tensor::zeros({4}, DType::f32, Device::cuda(0)), b = Tensor::zeros({4});
  EXPECT_THROW(
      cuda_backend().optim.sgd_step(p, Tensor::zeros({4}), b, {.lr = 0.1f, .momentum = 0.9f}),
      Error);
}

// Parameters of a small network (a 4-d conv weight, its bias, a linear weight and bias) as
// leaves on `d`, the same values on every call.
std::vector<NamedTensor> parameters_on(Device d) {
  const std::vector<std::pair<std::string, Shape>> shapes = {{"conv.weight", {16, 8, 3, 3}},
                                                             {"conv.bias", {16}},
                                                             {"fc.weight", {10, 7001}},
                                                             {"fc.bias", {10}}};
  std::vector<NamedTensor> ps;
  uint64_t seed = 40;
  for (const auto& [name, shape] : shapes)
    ps.push_back({name, test::random_tensor(shape, seed++).to(d).detach()});
  return ps;
}

// Runs `steps` optimizer steps with fixed gradients on an arena on `d`; returns the final
// parameters and momentum buffer on the host. make_opt builds the optimizer over the arena.
template <typename MakeOpt>
std::pair<Tensor, Tensor> run_steps(Device d, int steps, MakeOpt make_opt) {
  ParamArena arena(parameters_on(d), ParamArena::Layout::given_order);
  arena.set_weight_decay([](const ArenaSegment& s) { return s.shape.size() > 1; });
  auto opt = make_opt(arena);
  for (int k = 0; k < steps; ++k) {
    Tensor grads = arena.grads();  // a handle on the arena's gradient storage
    grads.copy_(test::random_tensor({arena.numel()}, 100 + k, -0.1f, 0.1f));
    opt.step();
  }
  return {arena.params().to(Device::cpu()), opt.momentum_buffer().to(Device::cpu())};
}

TEST(CudaOptim, SgdOptimizerOnADeviceArenaMatchesRefBitwise) {
  DPLAB_REQUIRE_CUDA();
  for (bool nesterov : {false, true}) {
    auto make = [&](ParamArena& a) {
      return SGD(a, {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = nesterov});
    };
    std::pair<Tensor, Tensor> want;
    {
      BackendOverride ref(ref_backend());
      want = run_steps(Device::cpu(), 3, make);
    }
    const auto got = run_steps(Device::cuda(0), 3, make);
    EXPECT_TRUE(bitwise_equal(got.first, want.first)) << "params, nesterov=" << nesterov;
    EXPECT_TRUE(bitwise_equal(got.second, want.second)) << "buffer, nesterov=" << nesterov;
  }
}

TEST(CudaOptim, LarsOptimizerOnADeviceArenaMatchesRef) {
  DPLAB_REQUIRE_CUDA();
  LARSOptions o;
  o.lr = 0.8;
  o.momentum = 0.9;
  o.weight_decay = 1e-3;
  o.trust_coefficient = 0.01;
  o.eps = 1e-9;
  auto make = [&](ParamArena& a) { return LARS(a, o); };
  std::pair<Tensor, Tensor> want;
  {
    BackendOverride ref(ref_backend());
    want = run_steps(Device::cpu(), 3, make);
  }
  const auto got = run_steps(Device::cuda(0), 3, make);
  // The norms are sums in another order: the trust ratios, and so the steps, agree to rounding.
  test::expect_close(got.first, want.first, 1e-12, "LARS params after 3 steps");
  test::expect_close(got.second, want.second, 1e-10, "LARS momentum after 3 steps");
}

TEST(CudaOptim, LarsKernelsMatchRef) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  for (int64_t n : kSizes) {
    const Tensor p0 = test::random_tensor({n}, 3 + n), g = test::random_tensor({n}, 4 + n);
    const Tensor b0 = test::random_tensor({n}, 5 + n);
    Tensor nr = Tensor::zeros({2}), nd = Tensor::zeros({2}, DType::f32, dev);
    ref_backend().optim.lars_norms(p0, g, nr);
    cuda_backend().optim.lars_norms(p0.to(dev), g.to(dev), nd);
    test::expect_close(nd.to(Device::cpu()), nr, 1e-12, "lars norms n=" + std::to_string(n));
    for (bool first : {true, false}) {
      LarsStepArgs a;
      a.lr = 0.4;
      a.momentum = 0.9f;
      a.weight_decay = 5e-4;
      a.eta = 0.02;
      a.first_step = first;
      // The same norms on both sides: the element update must agree bit for bit.
      Tensor p_ref = p0.clone(), b_ref = b0.clone(), p_dev = p0.to(dev), b_dev = b0.to(dev);
      ref_backend().optim.lars_step(p_ref, g, b_ref, nr, a);
      cuda_backend().optim.lars_step(p_dev, g.to(dev), b_dev, nr.to(dev), a);
      EXPECT_TRUE(bitwise_equal(p_dev, p_ref)) << "params n=" << n << " first=" << first;
      EXPECT_TRUE(bitwise_equal(b_dev, b_ref)) << "buffer n=" << n << " first=" << first;
    }
  }
}

TEST(CudaOptim, Dcs3gdKernelsMatchRef) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  const Dcs3gdUpdate up{0.3f, 0.05f, 0.9f, 1e-4f};
  for (int64_t n : kSizes) {
    for (bool have_r : {false, true}) {
      const Tensor wbar0 = test::random_tensor({n}, 11 + n);
      const Tensor r = test::random_tensor({n}, 12 + n, -0.05f, 0.05f);
      const Tensor w0 = test::random_tensor({n}, 13 + n);
      const Tensor g = test::random_tensor({n}, 14 + n, -0.5f, 0.5f);
      const Tensor v0 = test::random_tensor({n}, 15 + n, -0.01f, 0.01f);
      // The two passes of one step on backend `be`, operands on `d`.
      auto step = [&](const Backend& be, Device d) {
        Tensor wbar = wbar0.to(d).clone(), w = w0.to(d).clone(), v = v0.to(d).clone();
        Tensor s = Tensor::zeros({n}, DType::f32, d);
        Tensor sums = Tensor::zeros({3}, DType::i64, d), sq = Tensor::zeros({1}, DType::i64, d);
        be.optim.dcs3gd_average(wbar, have_r ? r.to(d) : Tensor(), w, g.to(d), {4.f, have_r}, sums);
        be.optim.dcs3gd_update(g.to(d), wbar, w, v, s, up, sq, Tensor());
        return std::tuple{wbar, w, v, s, f64_slot_values(sums), f64_slot_values(sq)};
      };
      const auto [wbar_r, w_r, v_r, s_r, sums_r, sq_r] = step(ref_backend(), Device::cpu());
      const auto [wbar_d, w_d, v_d, s_d, sums_d, sq_d] = step(cuda_backend(), dev);
      const std::string tag = "n=" + std::to_string(n) + " have_r=" + std::to_string(have_r);
      EXPECT_TRUE(bitwise_equal(wbar_d, wbar_r)) << "W̄ " << tag;
      EXPECT_TRUE(bitwise_equal(w_d, w_r)) << "W " << tag;
      EXPECT_TRUE(bitwise_equal(v_d, v_r)) << "V " << tag;
      EXPECT_TRUE(bitwise_equal(s_d, s_r)) << "S " << tag;
      for (size_t k = 0; k < 3; ++k)
        EXPECT_NEAR(sums_d[k], sums_r[k], 1e-12 * std::abs(sums_r[k])) << "sum " << k << " " << tag;
      EXPECT_NEAR(sq_d[0], sq_r[0], 1e-12 * std::abs(sq_r[0])) << "ΣW̄² " << tag;

      Tensor wbar_a = wbar0.clone(), w_a = w0.clone();
      Tensor wbar_b = wbar0.to(dev), w_b = w0.to(dev);
      ref_backend().optim.dcs3gd_drain(wbar_a, r, w_a, 4.f);
      cuda_backend().optim.dcs3gd_drain(wbar_b, r.to(dev), w_b, 4.f);
      EXPECT_TRUE(bitwise_equal(wbar_b, wbar_a) && bitwise_equal(w_b, w_a)) << "drain " << tag;
    }
  }
}

// λ from the sums on the device (dcs3gd_lambda) equals ref's bit for bit (the same double
// arithmetic in the same order), and the update reads it from device memory.
TEST(CudaOptim, Dcs3gdLambdaOnTheDeviceMatchesRef) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  const int64_t count = 37;
  Tensor sums = Tensor::zeros({4 * count}, DType::i64);
  for (int64_t j = 0; j < count; ++j) {
    set_f64_slot(sums, 4 * j, 0.37 * double(j + 1));
    set_f64_slot(sums, 4 * j + 1, j % 5 == 0 ? 0.0 : 1.0 / double(j + 3));
  }
  for (bool global : {false, true})
    for (bool correct : {true, false}) {
      Dcs3gdLambdaArgs a;
      a.lambda0 = 0.2;
      a.global = global;
      a.correct = correct;
      Tensor lr = Tensor::zeros({count}), ld = Tensor::zeros({count}, DType::f32, dev);
      ref_backend().optim.dcs3gd_lambda(sums, a, lr);
      cuda_backend().optim.dcs3gd_lambda(sums.to(dev), a, ld);
      EXPECT_TRUE(bitwise_equal(ld, lr)) << "global=" << global << " correct=" << correct;
    }
  Tensor wbar = Tensor::from_vector({1.5f}, {1}).to(dev),
         w = Tensor::from_vector({0.5f}, {1}).to(dev);
  Tensor g = Tensor::from_vector({2}, {1}).to(dev), v = Tensor::from_vector({1}, {1}).to(dev);
  Tensor s = Tensor::zeros({1}, DType::f32, dev), sq = Tensor::zeros({1}, DType::i64, dev);
  cuda_backend().optim.dcs3gd_update(g, wbar, w, v, s, Dcs3gdUpdate{99.f, 0.5f, 0.5f, 0.f}, sq,
                                     Tensor::from_vector({0.25f}, {1}).to(dev));
  EXPECT_EQ(v.item(), -1.f);
}

}  // namespace
}  // namespace dplab
