// Shared pieces of the op-case table (tests/common/op_cases.h): tolerances, deterministic input
// builders and option helpers used by the case families in op_cases_math.cpp (element-wise,
// reductions, shape ops) and op_cases_nn.cpp (linear, conv, pooling, batch norm, losses,
// dropout).
#pragma once
#include <array>
#include <vector>

#include "common/op_cases.h"

namespace dplab::test::cases {

using Inputs = std::vector<Tensor>;

// Tolerances (normalised error against ref). Element-wise maps, reductions and softmax differ
// from the reference loops only by summation order and libm ulps (~1e-14). GEMM-shaped work
// (linear, conv) runs f32 FMA math on CUDA too (no TF32), but cuDNN may pick Winograd or FFT
// algorithms that lose a few more bits (~1e-10). A wrong kernel is off by 1e-4 or more. Casts
// must agree bit for bit; dropout masks exactly.
constexpr double kTol = 1e-7;
constexpr double kGemmTol = 1e-6;
constexpr double kExact = 0.0;

inline Tensor requiring_grad(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

// f32 uniform in [lo, hi), requires grad.
inline Tensor uniform(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return requiring_grad(random_tensor(s, seed, lo, hi));
}

// |v| in [0.2, 1] with a random sign: central differences with eps 1e-2 never cross the kink
// at 0 of relu and abs.
inline Tensor away_from_zero(const Shape& s, uint64_t seed) {
  std::vector<float> v = random_tensor(s, seed).to_vector();
  for (float& x : v) x = (x < 0.f ? -1.f : 1.f) * (0.2f + 0.8f * std::fabs(x));
  return requiring_grad(Tensor::from_vector(v, s));
}

// A random permutation of spacing * (i - n/2): distinct values `spacing` apart, so maxima (max,
// max pooling, argmax) keep their winners under perturbations below spacing / 2, and ties
// (where backends may legitimately pick different winners) cannot occur.
inline Tensor distinct(const Shape& s, uint64_t seed, float spacing = 0.05f) {
  const int64_t n = shape_numel(s);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = spacing * static_cast<float>(i - n / 2);
  PhiloxStream rng(seed, 0xd157);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(i + 1));
    std::swap(v[i], v[j]);
  }
  return requiring_grad(Tensor::from_vector(v, s));
}

// Multiples of 1/64 in [-1, 1]: exact in bf16 and f16, and so are x +- 1/64, so casts are the
// identity on every finite-difference evaluation (eps = 1/64).
inline Tensor grid64(const Shape& s, uint64_t seed) {
  PhiloxStream rng(seed, 0x9e1d);
  std::vector<float> v(shape_numel(s));
  for (float& x : v) x = static_cast<float>(static_cast<int>(rng.next_u32() % 129) - 64) / 64.f;
  return requiring_grad(Tensor::from_vector(v, s));
}

inline Tensor no_grad(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return random_tensor(s, seed, lo, hi);
}

// Class indices (i * 7 + 3) mod classes: every class appears, deterministic.
inline Tensor targets(int64_t n, int64_t classes) {
  std::vector<int64_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = (i * 7 + 3) % classes;
  return Tensor::from_vector_i64(t, {n});
}

constexpr GradCheckOptions kBatchNormGrad{.eps = 1e-3, .atol = 5e-3};
// Batch norm then ReLU: a step of 1e-3 rarely carries a normalised value across 0, and the
// few samples it does are off by at most the kink's jump over 2·eps.
constexpr GradCheckOptions kBatchNormReluGrad{.eps = 1e-3, .atol = 2e-2};
constexpr GradCheckOptions kGridGrad{.eps = 1.0 / 64, .atol = 1e-2};
// Large cases exist for the parallel paths; a few finite-difference samples per input suffice
// there (each sample is two evaluations of the whole case).
constexpr GradCheckOptions kLargeGrad{.max_elements = 8};
// Outputs normalised over long rows (log_softmax over 1000 classes, batch norm over 1568 values
// per channel) share one f32-rounded statistic whose rounding moves the whole row at once: with
// eps 1e-2 that common shift (~1e-4 of the objective) swamps the difference quotient. These
// functions are smooth, so a larger step costs no accuracy.
constexpr GradCheckOptions kLargeRowGrad{.eps = 0.1, .max_elements = 8};
// Convolutions: each sample evaluates the whole conv twice.
constexpr GradCheckOptions kConvGrad{.max_elements = 16};

inline Conv2dOptions conv_opts(std::array<int64_t, 2> stride, std::array<int64_t, 2> pad,
                               std::array<int64_t, 2> dil = {1, 1}, int64_t groups = 1) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = pad;
  o.dilation = dil;
  o.groups = groups;
  return o;
}

inline Pool2dOptions pool_opts(int64_t k, int64_t stride, int64_t pad, int64_t dil = 1,
                               bool ceil_mode = false, bool include_pad = true) {
  Pool2dOptions o;
  o.kernel = {k, k};
  o.stride = {stride, stride};
  o.padding = {pad, pad};
  o.dilation = {dil, dil};
  o.ceil_mode = ceil_mode;
  o.count_include_pad = include_pad;
  return o;
}

// The case families, each appending its cases to the table.
void add_elementwise(std::vector<OpCase>& cs);
void add_reductions(std::vector<OpCase>& cs);
void add_shape_ops(std::vector<OpCase>& cs);
void add_linear(std::vector<OpCase>& cs);
void add_conv(std::vector<OpCase>& cs);
void add_pooling(std::vector<OpCase>& cs);
void add_batch_norm(std::vector<OpCase>& cs);
void add_losses(std::vector<OpCase>& cs);
void add_dropout(std::vector<OpCase>& cs);
void add_bf16_activations(std::vector<OpCase>& cs);
void add_blocked_layout(std::vector<OpCase>& cs);
void add_nhwc_layout(std::vector<OpCase>& cs);

}  // namespace dplab::test::cases
