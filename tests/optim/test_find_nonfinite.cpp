// OptimKernels::find_nonfinite (the non-finite guard's fused check): hand-made tensors with an
// inf or NaN at chosen positions, on every backend, against the positions we put them at.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

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

// Sizes on both sides of the CPU's OpenMP threshold (65536) and of a CUDA block, bad values
// first, inside and last; the same assertions for every backend (tensors on `dev`).
void expect_flags_exactly_the_bad_tensors(const Backend& be, Device dev) {
  for (int64_t n : {1, 7, 1000, 65536, 70001}) {
    for (int64_t at : {int64_t(0), n / 2, n - 1}) {
      for (float bad : {kInf, -kInf, std::nanf(""), -std::nanf("")}) {
        std::vector<float> v = finite_values(n);
        v[size_t(at)] = bad;
        Tensor x = Tensor::from_vector(v, {n}).to(dev);
        Tensor flags = Tensor::zeros({3}, DType::f32, dev);
        be.optim.find_nonfinite(x, flags, 1);
        EXPECT_EQ(flags.to_vector(), (std::vector<float>{0.f, 1.f, 0.f}))
            << be.name << " n=" << n << " at " << at << " value " << bad;
        // x is only read
        EXPECT_TRUE(std::isnan(x.to_vector()[size_t(at)]) == std::isnan(bad));
      }
    }
    // All finite (including FLT_MAX and subnormals): nothing flagged.
    Tensor x = Tensor::from_vector(finite_values(n), {n}).to(dev);
    Tensor flags = Tensor::zeros({2}, DType::f32, dev);
    be.optim.find_nonfinite(x, flags, 0);
    EXPECT_EQ(flags.to_vector(), (std::vector<float>{0.f, 0.f})) << be.name << " n=" << n;
  }
}

void expect_set_flags_and_other_slots_left_alone(const Backend& be, Device dev) {
  Tensor clean = Tensor::from_vector({1.f, 2.f}, {2}).to(dev);
  Tensor bad = Tensor::from_vector({1.f, kInf}, {2}).to(dev);
  Tensor flags = Tensor::from_vector({1.f, 0.f, 0.f}, {3}).to(dev);
  be.optim.find_nonfinite(clean, flags, 0);  // a clean tensor never clears a flag
  be.optim.find_nonfinite(bad, flags, 2);
  be.optim.find_nonfinite(clean, flags, 1);
  EXPECT_EQ(flags.to_vector(), (std::vector<float>{1.f, 0.f, 1.f})) << be.name;
}

TEST(FindNonfinite, FlagsExactlyTheTensorsWithInfOrNan) {
  for (const Backend* be : cpu_backends()) expect_flags_exactly_the_bad_tensors(*be, Device::cpu());
}

TEST(FindNonfinite, LeavesASetFlagAndOtherSlotsAlone) {
  for (const Backend* be : cpu_backends())
    expect_set_flags_and_other_slots_left_alone(*be, Device::cpu());
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

// The CPU tests' assertions on the device.
TEST(FindNonfiniteCuda, FlagsExactlyTheTensorsWithInfOrNan) {
  DPLAB_CUDA_TEST_GATE();
  expect_flags_exactly_the_bad_tensors(cuda_backend(), Device::cuda(0));
}

TEST(FindNonfiniteCuda, LeavesASetFlagAndOtherSlotsAlone) {
  DPLAB_CUDA_TEST_GATE();
  expect_set_flags_and_other_slots_left_alone(cuda_backend(), Device::cuda(0));
}

}  // namespace
}  // namespace dplab
