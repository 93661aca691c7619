// The fast optimizer kernels against the reference loops: both run the shared functor, so the
// results must be bitwise equal, including the OpenMP path (n > 65536) and odd lengths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/harness.h"
#include "common/optim_runs.h"

namespace dplab {
namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(OptimKernels, SgdStepCpuMatchesRefBitwise) {
  const std::vector<SgdStepArgs> cases = {
      {.lr = 0.1f},
      {.lr = 0.1f, .weight_decay = 1e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .first_step = true},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
      {.lr = 0.05f, .momentum = 0.9f, .dampening = 0.3f},
      {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true},
  };
  for (int64_t n : {1, 17, 1000, 70001}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const SgdStepArgs& a = cases[c];
      Tensor p0 = test::random_tensor({n}, 10 + n), g = test::random_tensor({n}, 20 + n);
      Tensor b0 = test::random_tensor({n}, 30 + n);
      Tensor p_ref = p0.clone(), b_ref = b0.clone(), p_cpu = p0.clone(), b_cpu = b0.clone();
      ref_backend().optim.sgd_step(p_ref, g, b_ref, a);
      cpu_backend().optim.sgd_step(p_cpu, g, b_cpu, a);
      EXPECT_TRUE(bitwise_equal(p_ref, p_cpu)) << "params, n=" << n << " case " << c;
      EXPECT_TRUE(bitwise_equal(b_ref, b_cpu)) << "buffer, n=" << n << " case " << c;
      EXPECT_FALSE(bitwise_equal(p_ref, p0)) << "the step changed nothing, case " << c;
      if (a.momentum == 0.f) {
        EXPECT_TRUE(bitwise_equal(b_ref, b0)) << "buffer touched, case " << c;
      }
    }
  }
}

TEST(OptimKernels, SgdStepSpotValues) {
  // p = 1, g = 2, buf = 3, lr 0.5, momentum 0.5, dampening 0.5, wd 0.25:
  // g' = 2 + 0.25 = 2.25, buf = 1.5 + 0.5 * 2.25 = 2.625, p = 1 - 0.5 * 2.625 = -0.3125
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::from_vector({1}, {1}), g = Tensor::from_vector({2}, {1});
    Tensor b = Tensor::from_vector({3}, {1});
    be->optim.sgd_step(p, g, b,
                       {.lr = 0.5f, .momentum = 0.5f, .dampening = 0.5f, .weight_decay = 0.25f});
    EXPECT_EQ(p.item(), -0.3125f) << be->name;
    EXPECT_EQ(b.item(), 2.625f) << be->name;
  }
}

TEST(OptimKernels, SgdStepRejectsBadOperands) {
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::zeros({4}), g = Tensor::zeros({3}), b = Tensor::zeros({4}), none;
    EXPECT_THROW(be->optim.sgd_step(p, g, b, {.lr = 0.1f}), Error) << be->name;
    Tensor g4 = Tensor::zeros({4});
    EXPECT_THROW(be->optim.sgd_step(p, g4, none, {.lr = 0.1f, .momentum = 0.9f}), Error);
    Tensor gi = Tensor::zeros({4}, DType::bf16);
    EXPECT_THROW(be->optim.sgd_step(p, gi, b, {.lr = 0.1f}), Error);
    EXPECT_NO_THROW(be->optim.sgd_step(p, g4, none, {.lr = 0.1f}));
  }
}

// Multi-tensor steps against the single-tensor step of the ref backend on each run of a hand
// layout (tests/common/optim_runs.h).
using test::per_run;
using test::RunLayout;

TEST(OptimKernels, SgdStepRunsEqualsTheStepOnEachRun) {
  const RunLayout l;
  const Tensor p0 = test::random_tensor({l.kN}, 1), g = test::random_tensor({l.kN}, 2);
  const Tensor b0 = test::random_tensor({l.kN}, 3);
  for (bool nesterov : {false, true}) {
    const SgdStepArgs a{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = nesterov};
    Tensor p_ref = p0.clone(), b_ref = b0.clone(), unused = b0.clone();
    per_run(l, p_ref, g, b_ref, unused,
            [&](Tensor& p, const Tensor& gr, Tensor& b, Tensor&, bool wd) {
              SgdStepArgs one = a;
              if (!wd) one.weight_decay = 0.f;
              ref_backend().optim.sgd_step(p, gr, b, one);
            });
    for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
      Tensor p = p0.clone(), b = b0.clone();
      be->optim.sgd_step_runs(p, g, b, l.runs, a, Tensor());
      EXPECT_TRUE(bitwise_equal(p, p_ref)) << be->name << " params, nesterov " << nesterov;
      EXPECT_TRUE(bitwise_equal(b, b_ref)) << be->name << " buffer, nesterov " << nesterov;
      const std::vector<float> pv = p.to_vector(), p0v = p0.to_vector();
      for (int64_t i : {17, 18, 19, 59990, 59999})
        EXPECT_EQ(pv[size_t(i)], p0v[size_t(i)]) << be->name << ": gap element " << i;
    }
  }
  // The flag matters: with every run decayed the undecayed runs' elements differ.
  std::vector<OptimRun> all = l.runs;
  for (OptimRun& r : all) r.weight_decay = true;
  Tensor p1 = p0.clone(), b1 = b0.clone(), p2 = p0.clone(), b2 = b0.clone();
  const SgdStepArgs a{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f};
  cpu_backend().optim.sgd_step_runs(p1, g, b1, l.runs, a, Tensor());
  cpu_backend().optim.sgd_step_runs(p2, g, b2, all, a, Tensor());
  EXPECT_NE(p1.to_vector()[5], p2.to_vector()[5]);          // run {0, 17, no decay}
  EXPECT_EQ(p1.to_vector()[70000], p2.to_vector()[70000]);  // a decayed run either way
}

TEST(OptimKernels, AdamwStepRunsEqualsTheStepOnEachRun) {
  const RunLayout l;
  const Tensor p0 = test::random_tensor({l.kN}, 4), g = test::random_tensor({l.kN}, 5);
  const Tensor m0 = test::random_tensor({l.kN}, 6, -0.1f, 0.1f);
  const Tensor v0 = test::random_tensor({l.kN}, 7, 0.f, 0.01f);
  const AdamWStepArgs a{.lr = 1e-3, .weight_decay = 0.01, .step = 3};
  Tensor p_ref = p0.clone(), m_ref = m0.clone(), v_ref = v0.clone();
  per_run(l, p_ref, g, m_ref, v_ref,
          [&](Tensor& p, const Tensor& gr, Tensor& m, Tensor& v, bool wd) {
            AdamWStepArgs one = a;
            if (!wd) one.weight_decay = 0.0;
            ref_backend().optim.adamw_step(p, gr, m, v, one);
          });
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
    be->optim.adamw_step_runs(p, g, m, v, l.runs, a, Tensor());
    EXPECT_TRUE(bitwise_equal(p, p_ref)) << be->name;
    EXPECT_TRUE(bitwise_equal(m, m_ref)) << be->name;
    EXPECT_TRUE(bitwise_equal(v, v_ref)) << be->name;
    EXPECT_EQ(p.to_vector()[18], p0.to_vector()[18]) << be->name << ": a gap element";
  }
}

// LARS over the hand layout, each run a tensor, one of them excluded (trust 1): the norms pass
// writes the pair lars_norms writes for the run alone and leaves the excluded run's pair as it
// was; the update equals lars_step on each run with its norms, weight decay and exclusion.
TEST(OptimKernels, LarsStepRunsEqualsTheStepOnEachRun) {
  RunLayout l;
  l.runs[2].excluded = true;
  const int64_t k = int64_t(l.runs.size());
  const Tensor p0 = test::random_tensor({l.kN}, 8), g = test::random_tensor({l.kN}, 9, -0.1f, 0.1f);
  const Tensor b0 = test::random_tensor({l.kN}, 10);
  const LarsStepArgs a{.lr = 0.5, .momentum = 0.9f, .weight_decay = 1e-4, .eta = 0.02};
  Tensor p_ref = p0.clone(), b_ref = b0.clone();
  Tensor n_ref = Tensor::full({2 * k}, -1.0);  // -1: not written
  for (int64_t i = 0; i < k; ++i) {
    const OptimRun& r = l.runs[size_t(i)];
    const int64_t lo = r.offset, hi = lo + r.numel;
    Tensor pr = p_ref.flat_range(lo, hi), br = b_ref.flat_range(lo, hi);
    Tensor nr = n_ref.flat_range(2 * i, 2 * i + 2);
    if (!r.excluded) ref_backend().optim.lars_norms(pr, g.flat_range(lo, hi), nr);
    LarsStepArgs one = a;
    one.weight_decay = r.weight_decay ? a.weight_decay : 0.0;
    one.excluded = r.excluded;
    ref_backend().optim.lars_step(pr, g.flat_range(lo, hi), br, nr, one);
  }
  EXPECT_EQ(n_ref.to_vector()[4], -1.f);  // the excluded run's pair
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = p0.clone(), b = b0.clone(), n = Tensor::full({2 * k}, -1.0);
    be->optim.lars_norms_runs(p, g, l.runs, n);
    // The CPU's norms are its reduce family's (the l2_norm op's bits), ref's an f64 loop: both
    // round a double sum to f32, so they agree to f32 rounding.
    const std::vector<float> nv = n.to_vector(), nr = n_ref.to_vector();
    for (size_t i = 0; i < nv.size(); ++i)
      EXPECT_NEAR(nv[i], nr[i], 1e-6f * std::abs(nr[i])) << be->name << " norm " << i;
    be->optim.lars_step_runs(p, g, b, n_ref, l.runs, a, Tensor());  // ref's norms: the same trust
    EXPECT_TRUE(bitwise_equal(p, p_ref)) << be->name << " params";
    EXPECT_TRUE(bitwise_equal(b, b_ref)) << be->name << " buffer";
    EXPECT_EQ(p.to_vector()[19], p0.to_vector()[19]) << be->name << ": a gap element";
  }
}

// nonfinite = skip decided where the flags live (issue #34); CUDA twin:
// CudaOptim.SkipFlagsDropTheStep.
TEST(OptimKernels, SkipFlagsDropTheStep) {
  for (const Backend* be : {&ref_backend(), &cpu_backend()})
    test::check_skip_flags_drop_the_step(*be, Device::cpu());
}

TEST(OptimKernels, StepRunsRejectRunsOutsideOrOverlapping) {
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor p = Tensor::zeros({10}), g = Tensor::zeros({10}), b = Tensor::zeros({10});
    auto message = [&](const std::vector<OptimRun>& runs) {
      try {
        be->optim.sgd_step_runs(p, g, b, runs, {.lr = 0.1f, .momentum = 0.9f}, Tensor());
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    EXPECT_NE(message({{0, 4, true}, {6, 5, true}})
                  .find("run 1 (offset 6, 5 elements) is outside "
                        "the buffers' 10 elements"),
              std::string::npos)
        << be->name;
    EXPECT_NE(message({{-1, 2, true}}).find("run 0"), std::string::npos) << be->name;
    EXPECT_NE(message({{5, 5, true}, {0, 6, false}}).find("runs [0, 6) and [5, 10) overlap"),
              std::string::npos)
        << be->name;
    EXPECT_EQ(message({{5, 5, true}, {0, 5, false}}), "no error") << be->name;
  }
}

}  // namespace
}  // namespace dplab
