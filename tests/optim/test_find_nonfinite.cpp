// OptimKernels::find_nonfinite (the non-finite guard's fused check): hand-made tensors with an
// inf or NaN at chosen positions, on every backend, against the positions we put them at.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "common/harness.h"
#include "dplab/core/backend.h"
#include "dplab/core/device.h"

namespace dplab {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// n finite values of every kind the check must not flag: large, tiny, subnormal, signed zero.
std::vector<float> finite_values(int64_t n) {
  const float specials[] = {FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, -0.f, 0.f, 3.5f};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = specials[i % 8] * (i % 16 < 8 ? 1.f : 0.5f);
  return v;
}

std::vector<const Backend*> cpu_backends() {
  return {&ref_backend(), &cpu_backend()};
}

TEST(FindNonfinite, FlagsExactlyTheTensorsWithInfOrNan) {
  // Sizes on both sides of the OpenMP threshold (65536), bad values first, inside and last.
  for (const Backend* be : cpu_backends()) {
    for (int64_t n : {1, 7, 65536, 70001}) {
      for (int64_t at : {int64_t(0), n / 2, n - 1}) {
        for (float bad : {kInf, -kInf, std::nanf(""), -std::nanf("")}) {
          std::vector<float> v = finite_values(n);
          v[size_t(at)] = bad;
          Tensor x = Tensor::from_vector(v, {n});
          Tensor flags = Tensor::zeros({3});
          be->optim.find_nonfinite(x, flags, 1);
          EXPECT_EQ(flags.to_vector(), (std::vector<float>{0.f, 1.f, 0.f}))
              << "n=" << n << " at " << at << " value " << bad;
          // x is only read
          EXPECT_TRUE(std::isnan(x.to_vector()[size_t(at)]) == std::isnan(bad));
        }
      }
      // All finite (including FLT_MAX and subnormals): nothing flagged.
      Tensor x = Tensor::from_vector(finite_values(n), {n});
      Tensor flags = Tensor::zeros({2});
      be->optim.find_nonfinite(x, flags, 0);
      EXPECT_EQ(flags.to_vector(), (std::vector<float>{0.f, 0.f})) << "n=" << n;
    }
  }
}

TEST(FindNonfinite, LeavesASetFlagAndOtherSlotsAlone) {
  for (const Backend* be : cpu_backends()) {
    Tensor clean = Tensor::from_vector({1.f, 2.f}, {2});
    Tensor bad = Tensor::from_vector({1.f, kInf}, {2});
    Tensor flags = Tensor::from_vector({1.f, 0.f, 0.f}, {3});
    be->optim.find_nonfinite(clean, flags, 0);  // a clean tensor never clears a flag
    be->optim.find_nonfinite(bad, flags, 2);
    be->optim.find_nonfinite(clean, flags, 1);
    EXPECT_EQ(flags.to_vector(), (std::vector<float>{1.f, 0.f, 1.f}));
  }
}

TEST(FindNonfinite, RejectsBadOperands) {
  Tensor x = Tensor::from_vector({1.f, 2.f}, {2});
  Tensor flags = Tensor::zeros({2});
  EXPECT_THROW(cpu_backend().optim.find_nonfinite(x, flags, 2), Error);
  Tensor i = Tensor::from_vector_i64({1, 2}, {2});
  EXPECT_THROW(cpu_backend().optim.find_nonfinite(i, flags, 0), Error);
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1);  // not contiguous
  EXPECT_THROW(cpu_backend().optim.find_nonfinite(t, flags, 0), Error);
}

TEST(FindNonfiniteCuda, MatchesTheChosenPositions) {
  if (!cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  const Device d = Device::cuda(0);
  for (int64_t n : {1, 1000, 70001}) {
    for (int64_t at : {int64_t(-1), int64_t(0), n - 1}) {
      std::vector<float> v = finite_values(n);
      if (at >= 0) v[size_t(at)] = at % 2 ? std::nanf("") : -kInf;
      Tensor x = Tensor::from_vector(v, {n}).to(d);
      Tensor flags = Tensor::zeros({2}, DType::f32, d);
      cuda_backend().optim.find_nonfinite(x, flags, 1);
      EXPECT_EQ(flags.to_vector(), (std::vector<float>{0.f, at >= 0 ? 1.f : 0.f}))
          << "n=" << n << " at " << at;
    }
  }
}

}  // namespace
}  // namespace dplab
