// A hand layout of runs for the multi-tensor optimizer steps (core/kernels/optim.h,
// OptimRun), shared by the CPU tests (tests/optim/test_optim_kernels.cpp) and their CUDA twins
// (tests/cuda/test_cuda_optim.cpp).
#pragma once
#include <vector>

#include "dplab/core/kernels/optim.h"
#include "dplab/core/tensor.h"

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

}  // namespace dplab::test
