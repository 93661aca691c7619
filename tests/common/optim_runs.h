// A hand layout of runs for the multi-tensor optimizer steps (core/kernels/optim.h,
// OptimRun), shared by the CPU tests (tests/optim/test_optim_kernels.cpp) and their CUDA twins
// (tests/cuda/test_cuda_optim.cpp).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dplab/core/backend.h"
#include "dplab/core/kernels/optim.h"
#include "dplab/core/tensor.h"
#include "harness.h"

namespace dplab::test {

// Multi-tensor steps (sgd_step_runs, adamw_step_runs) are checked on a hand layout of 100,000
// elements: runs of mixed weight-decay flags, given out of order, with gaps between them that no
// run covers, and one empty run. The reference is the single-tensor step of the ref backend applied
// run by run, weight decay zeroed by hand where the flag is off; the gaps must stay untouched.
// 100,000 elements in all: the CPU kernel's OpenMP path, with shares that start inside runs.
struct RunLayout {
  static constexpr int64_t kN = 100000;
  std::vector<OptimRun> runs = {{60000, 40000, true},  // the arena's end
                                {0, 17, false},        // then a gap of 3 (17..19)
                                {20, 39980, true},
                                {40000, 0, false},       // empty
                                {40000, 19990, false}};  // then a gap of 10 (59990..59999)
};

// Calls one(p, g, s1, s2, weight_decay) with each run's slices of the four host buffers.
template <typename One>
void per_run(const RunLayout& l, Tensor& p, const Tensor& g, Tensor& s1, Tensor& s2, One one) {
  for (const OptimRun& r : l.runs) {
    const int64_t lo = r.offset, hi = r.offset + r.numel;
    Tensor pr = p.flat_range(lo, hi), a = s1.flat_range(lo, hi), b = s2.flat_range(lo, hi);
    one(pr, g.flat_range(lo, hi), a, b, r.weight_decay);
  }
}

// Whether two tensors hold the same bytes (read on the host).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()).contiguous(), hb = b.to(Device::cpu()).contiguous();
  return ha.dtype() == hb.dtype() && ha.nbytes() == hb.nbytes() &&
         std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

// The skip flags of the multi-tensor steps (OptimKernels' skip_if) and zero_if_flagged, on one
// backend whose tensors live on `dev`: the same assertions for ref and cpu
// (tests/optim/test_optim_kernels.cpp) and CUDA (tests/cuda/test_cuda_optim.cpp). A flag set
// anywhere among them leaves parameters and state bit for bit as they were; flags all zero give
// the step taken without flags, bit for bit; zero_if_flagged zeroes only when a flag is set.
inline void check_skip_flags_drop_the_step(const Backend& be, Device dev) {
  const RunLayout l;
  const Tensor p0 = random_tensor({l.kN}, 41), g0 = random_tensor({l.kN}, 42);
  const Tensor s0 = random_tensor({l.kN}, 43, 0.f, 0.01f), t0 = random_tensor({l.kN}, 44);
  const Tensor g = g0.to(dev);
  const SgdStepArgs sa{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = true};
  const AdamWStepArgs aa{.lr = 1e-3, .weight_decay = 0.01, .step = 3};
  const LarsStepArgs la{.lr = 0.5, .momentum = 0.9f, .weight_decay = 1e-4, .eta = 0.02};
  const Tensor norms = Tensor::full({int64_t(2 * l.runs.size())}, 2.0).to(dev);
  // Each optimizer's step on copies of the start state; returns the state afterwards.
  // A copy on dev (to() alone returns the tensor itself when it is there already).
  auto fresh = [&](const Tensor& x) { return x.to(dev).clone(); };
  auto run = [&](const char* which, const Tensor& flags) {
    Tensor p = fresh(p0), s = fresh(s0), t = fresh(t0);
    if (std::string(which) == "sgd") be.optim.sgd_step_runs(p, g, s, l.runs, sa, flags);
    if (std::string(which) == "adamw") be.optim.adamw_step_runs(p, g, t, s, l.runs, aa, flags);
    if (std::string(which) == "lars") be.optim.lars_step_runs(p, g, s, norms, l.runs, la, flags);
    return std::vector<Tensor>{p, s, t};
  };
  const Tensor clear = Tensor::zeros({3}).to(dev);
  const Tensor set_last = Tensor::from_vector({0.f, 0.f, 1.f}, {3}).to(dev);
  const Tensor set_nan = Tensor::from_vector({std::nanf(""), 0.f}, {2}).to(dev);
  for (const char* which : {"sgd", "adamw", "lars"}) {
    const std::vector<Tensor> taken = run(which, Tensor()), with_clear = run(which, clear);
    EXPECT_FALSE(same_bits(taken[0], p0)) << be.name << " " << which << ": the step did nothing";
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(same_bits(with_clear[i], taken[i])) << be.name << " " << which << " " << i;
    for (const Tensor& flags : {set_last, set_nan}) {
      const std::vector<Tensor> dropped = run(which, flags);
      EXPECT_TRUE(same_bits(dropped[0], p0)) << be.name << " " << which << ": params changed";
      EXPECT_TRUE(same_bits(dropped[1], s0)) << be.name << " " << which << ": state changed";
      EXPECT_TRUE(same_bits(dropped[2], t0)) << be.name << " " << which << ": state changed";
    }
  }
  Tensor x = fresh(g0);
  be.optim.zero_if_flagged(x, clear);
  EXPECT_TRUE(same_bits(x, g0)) << be.name << ": zeroed with no flag set";
  be.optim.zero_if_flagged(x, set_last);
  EXPECT_TRUE(same_bits(x, Tensor::zeros({l.kN}))) << be.name << ": not zeroed";
  // Flags the kernels cannot take: another dtype, more than kMaxSkipFlags, none at all.
  Tensor p = fresh(p0), s = fresh(s0);
  for (const Tensor& bad : {Tensor::zeros({2}, DType::i64).to(dev),
                            Tensor::zeros({kMaxSkipFlags + 1}).to(dev), Tensor::zeros({0}).to(dev)})
    EXPECT_THROW(be.optim.sgd_step_runs(p, g, s, l.runs, sa, bad), Error) << be.name;
}

}  // namespace dplab::test
