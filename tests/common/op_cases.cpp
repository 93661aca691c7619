#include "common/op_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

namespace dplab::test {
namespace {

using Inputs = std::vector<Tensor>;

// Tolerances (normalised error against ref). Element-wise maps, reductions and softmax differ
// from the reference loops only by summation order and libm ulps (~1e-14). GEMM-shaped work
// (linear, conv) runs f32 FMA math on CUDA too (no TF32), but cuDNN may pick Winograd or FFT
// algorithms that lose a few more bits (~1e-10). A wrong kernel is off by 1e-4 or more. Casts
// must agree bit for bit; dropout masks exactly.
constexpr double kTol = 1e-7;
constexpr double kGemmTol = 1e-6;
constexpr double kExact = 0.0;

Tensor requiring_grad(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

// f32 uniform in [lo, hi), requires grad.
Tensor uniform(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return requiring_grad(random_tensor(s, seed, lo, hi));
}

// |v| in [0.2, 1] with a random sign: central differences with eps 1e-2 never cross the kink
// at 0 of relu and abs.
Tensor away_from_zero(const Shape& s, uint64_t seed) {
  std::vector<float> v = random_tensor(s, seed).to_vector();
  for (float& x : v) x = (x < 0.f ? -1.f : 1.f) * (0.2f + 0.8f * std::fabs(x));
  return requiring_grad(Tensor::from_vector(v, s));
}

// A random permutation of spacing * (i - n/2): distinct values `spacing` apart, so maxima (max,
// max pooling, argmax) keep their winners under perturbations below spacing / 2, and ties
// (where backends may legitimately pick different winners) cannot occur.
Tensor distinct(const Shape& s, uint64_t seed, float spacing = 0.05f) {
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
Tensor grid64(const Shape& s, uint64_t seed) {
  PhiloxStream rng(seed, 0x9e1d);
  std::vector<float> v(shape_numel(s));
  for (float& x : v) x = static_cast<float>(static_cast<int>(rng.next_u32() % 129) - 64) / 64.f;
  return requiring_grad(Tensor::from_vector(v, s));
}

Tensor no_grad(const Shape& s, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return random_tensor(s, seed, lo, hi);
}

// Class indices (i * 7 + 3) mod classes: every class appears, deterministic.
Tensor targets(int64_t n, int64_t classes) {
  std::vector<int64_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = (i * 7 + 3) % classes;
  return Tensor::from_vector_i64(t, {n});
}

constexpr GradCheckOptions kBatchNormGrad{.eps = 1e-3, .atol = 5e-3};
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

Conv2dOptions conv_opts(std::array<int64_t, 2> stride, std::array<int64_t, 2> pad,
                        std::array<int64_t, 2> dil = {1, 1}, int64_t groups = 1) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = pad;
  o.dilation = dil;
  o.groups = groups;
  return o;
}

Pool2dOptions pool_opts(int64_t k, int64_t stride, int64_t pad, int64_t dil = 1,
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

void add_elementwise(std::vector<OpCase>& cs) {
  enum class Domain { any, positive, away_from_zero };
  struct Unary {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    Domain domain;
  };
  const std::vector<Unary> unaries = {
      {"neg", [](const Tensor& x) { return neg(x); }, Domain::any},
      {"exp", [](const Tensor& x) { return exp(x); }, Domain::any},
      {"log", [](const Tensor& x) { return log(x); }, Domain::positive},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, Domain::positive},
      {"abs", [](const Tensor& x) { return abs(x); }, Domain::away_from_zero},
      {"square", [](const Tensor& x) { return square(x); }, Domain::any},
      {"relu", [](const Tensor& x) { return relu(x); }, Domain::away_from_zero},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, Domain::any},
      {"tanh", [](const Tensor& x) { return tanh(x); }, Domain::any},
      {"add_scalar", [](const Tensor& x) { return add_scalar(x, 0.7f); }, Domain::any},
      {"mul_scalar", [](const Tensor& x) { return mul_scalar(x, -1.3f); }, Domain::any},
  };
  for (const Unary& u : unaries) {
    auto make = [d = u.domain](const Shape& s, uint64_t seed) {
      switch (d) {
        case Domain::positive:
          return uniform(s, seed, 0.5f, 2.f);
        case Domain::away_from_zero:
          return away_from_zero(s, seed);
        default:
          return uniform(s, seed, -2.f, 2.f);
      }
    };
    const std::string n = u.name;
    cs.push_back({.name = n + "_3x5x7",
                  .ops = {n},
                  .inputs =
                      [=] {
                        return Inputs{make({3, 5, 7}, 1)};
                      },
                  .fn = [op = u.op](const Inputs& v) { return Inputs{op(v[0])}; }});
    // A transposed (non-contiguous) operand: the kernels' strided path.
    cs.push_back(
        {.name = n + "_transposed",
         .ops = {n, "transpose"},
         .inputs =
             [=] {
               return Inputs{make({7, 5, 3}, 2)};
             },
         .fn = [op = u.op](const Inputs& v) { return Inputs{op(transpose(v[0], 0, 2))}; }});
    // Large enough for the parallel paths (OpenMP threshold, many CUDA blocks).
    cs.push_back({.name = n + "_large",
                  .ops = {n},
                  .inputs =
                      [=] {
                        return Inputs{make({300, 257}, 3)};
                      },
                  .fn = [op = u.op](const Inputs& v) { return Inputs{op(v[0])}; },
                  .grad = kLargeGrad});
  }

  struct Binary {
    const char* name;
    Tensor (*op)(const Tensor&, const Tensor&);
  };
  const Binary binaries[] = {{"add", &add}, {"sub", &sub}, {"mul", &mul}, {"div", &div}};
  struct Shapes {
    const char* name;
    Shape a, b;
  };
  const std::vector<Shapes> shapes = {
      {"same", {4, 6}, {4, 6}},
      {"bcast_trailing", {33, 10}, {10}},
      {"bcast_middle", {2, 3, 4, 5}, {3, 1, 5}},
      {"bcast_both", {4, 1}, {1, 6}},
      {"bcast_scalar_rhs", {5, 4}, {}},
      {"bcast_scalar_lhs", {}, {5, 4}},
      {"large_bcast", {256, 300}, {300}},
  };
  for (const Binary& b : binaries) {
    // Divisors in [0.5, 2]: away from the pole.
    const bool is_div = std::string(b.name) == "div";
    for (const Shapes& s : shapes) {
      cs.push_back({.name = fmt::format("{}_{}", b.name, s.name),
                    .ops = {b.name},
                    .inputs =
                        [=] {
                          return Inputs{
                              uniform(s.a, 11, -2.f, 2.f),
                              is_div ? uniform(s.b, 12, 0.5f, 2.f) : uniform(s.b, 12, -2.f, 2.f)};
                        },
                    .fn = [op = b.op](const Inputs& v) { return Inputs{op(v[0], v[1])}; },
                    .grad = shape_numel(s.a) > 10000 ? kLargeGrad : GradCheckOptions{}});
    }
    // lhs transposed, rhs broadcast along the other dim.
    cs.push_back(
        {.name = fmt::format("{}_transposed_bcast", b.name),
         .ops = {b.name, "transpose"},
         .inputs =
             [=] {
               return Inputs{uniform({6, 4}, 13, -2.f, 2.f), is_div
                                                                 ? uniform({4, 1}, 14, 0.5f, 2.f)
                                                                 : uniform({4, 1}, 14, -2.f, 2.f)};
             },
         .fn = [op = b.op](const Inputs& v) { return Inputs{op(transpose(v[0], 0, 1), v[1])}; }});
  }

  // Casts: round trips through the half types on values exact in both (differentiable), and
  // rounding of arbitrary values (outputs must agree bit for bit with the reference).
  for (DType t : {DType::bf16, DType::f16}) {
    const std::string tn(dtype_name(t));
    cs.push_back({.name = "cast_" + tn + "_roundtrip",
                  .ops = {"cast"},
                  .inputs =
                      [] {
                        return Inputs{grid64({6, 11}, 21)};
                      },
                  .fn = [t](const Inputs& v) { return Inputs{cast(cast(v[0], t), DType::f32)}; },
                  .tol = kExact,
                  .grad = kGridGrad});
    cs.push_back({.name = "cast_" + tn + "_rounding",
                  .ops = {"cast"},
                  .inputs =
                      [] {
                        return Inputs{uniform({40, 33}, 22, -300.f, 300.f)};
                      },
                  .fn = [t](const Inputs& v) { return Inputs{cast(cast(v[0], t), DType::f32)}; },
                  .tol = kExact,
                  .finite_differences = false});
    // A half operand in f32 arithmetic (what autocast produces): add and mul read it directly.
    cs.push_back({.name = "add_mul_" + tn + "_operand",
                  .ops = {"cast", "add", "mul"},
                  .inputs =
                      [] {
                        return Inputs{grid64({5, 8}, 23), grid64({5, 8}, 24)};
                      },
                  .fn =
                      [t](const Inputs& v) {
                        Tensor h = cast(v[0], t);
                        return Inputs{mul(add(h, v[1]), h)};
                      },
                  .grad = kGridGrad});
  }

  // In-place accumulation (no autograd): acc += alpha * g with f32, bf16 and f16 addends, and
  // x *= s. fn works on copies, so the inputs stay as built.
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    cs.push_back({.name = fmt::format("add_inplace_{}", dtype_name(t)),
                  .ops = {"add_"},
                  .inputs =
                      [t] {
                        return Inputs{no_grad({70, 31}, 25), no_grad({70, 31}, 26).to(t)};
                      },
                  .fn =
                      [](const Inputs& v) {
                        Tensor acc = v[0].clone();
                        add_(acc, v[1], -0.37f);
                        return Inputs{acc};
                      },
                  .tol = t == DType::f32 ? kTol : 1e-12});
  }
  cs.push_back({.name = "mul_inplace",
                .ops = {"mul_"},
                .inputs =
                    [] {
                      return Inputs{no_grad({70, 31}, 27)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor x = v[0].clone();
                      mul_(x, 1.7f);
                      return Inputs{x};
                    }});
}

void add_reductions(std::vector<OpCase>& cs) {
  using F = std::function<Tensor(const Tensor&)>;
  struct R {
    std::string name;
    std::vector<std::string> ops;
    Shape shape;
    F f;
    bool distinct_values = false;
  };
  const std::vector<R> rs = {
      {"sum_all", {"sum"}, {4, 5, 6}, [](const Tensor& x) { return sum(x); }},
      {"sum_all_large", {"sum"}, {300, 301}, [](const Tensor& x) { return sum(x); }},
      {"sum_dim1", {"sum"}, {4, 5, 6}, [](const Tensor& x) { return sum(x, {1}); }},
      {"sum_dims02_keepdim",
       {"sum"},
       {4, 5, 6},
       [](const Tensor& x) {
         return sum(x, {0, 2}, true);
       }},
      {"sum_last_negative_dim", {"sum"}, {4, 5, 6}, [](const Tensor& x) { return sum(x, {-1}); }},
      {"sum_transposed",
       {"sum", "transpose"},
       {6, 5, 4},
       [](const Tensor& x) { return sum(transpose(x, 0, 2), {1}); }},
      {"sum_large_rows", {"sum"}, {512, 300}, [](const Tensor& x) { return sum(x, {0}); }},
      {"mean_all", {"mean"}, {4, 5, 6}, [](const Tensor& x) { return mean(x); }},
      {"mean_dim2", {"mean"}, {4, 5, 6}, [](const Tensor& x) { return mean(x, {2}); }},
      {"mean_nhw_keepdim",
       {"mean"},
       {4, 3, 5, 5},
       [](const Tensor& x) {
         return mean(x, {0, 2, 3}, true);
       }},
      {"max_all", {"max"}, {5, 7}, [](const Tensor& x) { return max(x); }, true},
      {"max_all_large", {"max"}, {100, 123}, [](const Tensor& x) { return max(x); }, true},
      {"max_all_transposed",
       {"max", "transpose"},
       {9, 4},
       [](const Tensor& x) { return max(transpose(x, 0, 1)); },
       true},
      {"l2_norm", {"l2_norm"}, {6, 7}, [](const Tensor& x) { return l2_norm(x); }},
      {"l2_norm_large", {"l2_norm"}, {300, 257}, [](const Tensor& x) { return l2_norm(x); }},
  };
  for (const R& r : rs) {
    cs.push_back({.name = r.name,
                  .ops = r.ops,
                  .inputs =
                      [r] {
                        return Inputs{r.distinct_values ? distinct(r.shape, 31)
                                                        : uniform(r.shape, 31)};
                      },
                  .fn = [f = r.f](const Inputs& v) { return Inputs{f(v[0])}; },
                  .grad = shape_numel(r.shape) > 10000 ? kLargeGrad : GradCheckOptions{}});
  }
  // No gradient: argmax (i64), sum_of_squares (double, optimizers), sum_to (broadcast grads).
  for (int dim : {0, 1, -1}) {
    cs.push_back({.name = fmt::format("argmax_dim{}", dim < 0 ? "_last" : std::to_string(dim)),
                  .ops = {"argmax"},
                  .inputs =
                      [] {
                        return Inputs{distinct({6, 9, 5}, 32).detach()};
                      },
                  .fn = [dim](const Inputs& v) { return Inputs{argmax(v[0], dim)}; }});
  }
  cs.push_back({.name = "sum_of_squares",
                .ops = {"sum_of_squares"},
                .inputs =
                    [] {
                      return Inputs{no_grad({300, 257}, 33)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{Tensor::scalar(static_cast<float>(sum_of_squares(v[0])))};
                    }});
  cs.push_back({.name = "sum_to",
                .ops = {"sum_to"},
                .inputs =
                    [] {
                      return Inputs{no_grad({4, 5, 6}, 34)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{sum_to(v[0], {5, 1})};
                    }});
}

void add_shape_ops(std::vector<OpCase>& cs) {
  cs.push_back({.name = "reshape_view",
                .ops = {"reshape"},
                .inputs =
                    [] {
                      return Inputs{uniform({4, 6}, 41)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{reshape(v[0], {2, -1, 3})};
                    }});
  // Reshaping a transposed tensor copies: the copy kernel's strided path.
  cs.push_back(
      {.name = "reshape_transposed_copy",
       .ops = {"reshape", "transpose"},
       .inputs =
           [] {
             return Inputs{uniform({4, 6}, 42)};
           },
       .fn = [](const Inputs& v) { return Inputs{reshape(transpose(v[0], 0, 1), {-1})}; }});
  cs.push_back({.name = "flatten_from1",
                .ops = {"flatten"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 3, 4, 5}, 43)};
                    },
                .fn = [](const Inputs& v) { return Inputs{flatten(v[0])}; }});
  cs.push_back({.name = "flatten_dims01",
                .ops = {"flatten"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 3, 4, 5}, 44)};
                    },
                .fn = [](const Inputs& v) { return Inputs{flatten(v[0], 0, 1)}; }});
  cs.push_back({.name = "transpose_view",
                .ops = {"transpose"},
                .inputs =
                    [] {
                      return Inputs{uniform({3, 4, 5}, 45)};
                    },
                .fn = [](const Inputs& v) { return Inputs{transpose(v[0], 1, 2)}; }});
  cs.push_back({.name = "contiguous_of_transpose",
                .ops = {"contiguous", "transpose"},
                .inputs =
                    [] {
                      return Inputs{uniform({3, 4, 5}, 46)};
                    },
                .fn = [](const Inputs& v) { return Inputs{contiguous(transpose(v[0], 0, 2))}; }});
}

void add_linear(std::vector<OpCase>& cs) {
  cs.push_back({.name = "linear_bias",
                .ops = {"linear"},
                .inputs =
                    [] {
                      return Inputs{uniform({5, 7}, 51), uniform({3, 7}, 52), uniform({3}, 53)};
                    },
                .fn = [](const Inputs& v) { return Inputs{linear(v[0], v[1], v[2])}; },
                .tol = kGemmTol});
  cs.push_back({.name = "linear_nobias",
                .ops = {"linear"},
                .inputs =
                    [] {
                      return Inputs{uniform({5, 7}, 54), uniform({3, 7}, 55)};
                    },
                .fn = [](const Inputs& v) { return Inputs{linear(v[0], v[1], Tensor())}; },
                .tol = kGemmTol});
  cs.push_back({.name = "linear_large",
                .ops = {"linear"},
                .inputs =
                    [] {
                      return Inputs{uniform({64, 300}, 56), uniform({40, 300}, 57, -0.1f, 0.1f),
                                    uniform({40}, 58)};
                    },
                .fn = [](const Inputs& v) { return Inputs{linear(v[0], v[1], v[2])}; },
                .tol = kGemmTol,
                .grad = kLargeGrad});
  cs.push_back(
      {.name = "linear_transposed_input",
       .ops = {"linear", "transpose"},
       .inputs =
           [] {
             return Inputs{uniform({7, 5}, 59), uniform({3, 7}, 60), uniform({3}, 61)};
           },
       .fn = [](const Inputs& v) { return Inputs{linear(transpose(v[0], 0, 1), v[1], v[2])}; },
       .tol = kGemmTol});
  cs.push_back({.name = "matmul",
                .ops = {"matmul"},
                .inputs =
                    [] {
                      return Inputs{uniform({4, 6}, 62), uniform({6, 5}, 63)};
                    },
                .fn = [](const Inputs& v) { return Inputs{matmul(v[0], v[1])}; },
                .tol = kGemmTol});
  cs.push_back({.name = "matmul_transposed_operands",
                .ops = {"matmul", "transpose"},
                .inputs =
                    [] {
                      return Inputs{uniform({6, 4}, 64), uniform({5, 6}, 65)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{matmul(transpose(v[0], 0, 1), transpose(v[1], 0, 1))};
                    },
                .tol = kGemmTol});
}

void add_conv(std::vector<OpCase>& cs) {
  struct C {
    const char* name;
    Shape x, w;
    bool bias;
    Conv2dOptions o;
    bool transposed_input = false;  // x built as [N, C, W, H] and transposed in fn
  };
  const std::vector<C> convs = {
      {"conv_3x3_pad1_bias", {2, 3, 7, 7}, {4, 3, 3, 3}, true, conv_opts({1, 1}, {1, 1})},
      {"conv_stride2_pad1", {2, 3, 9, 9}, {5, 3, 3, 3}, true, conv_opts({2, 2}, {1, 1})},
      {"conv_dilation2", {1, 2, 9, 9}, {3, 2, 3, 3}, false, conv_opts({1, 1}, {2, 2}, {2, 2})},
      {"conv_groups2", {2, 4, 6, 6}, {6, 2, 3, 3}, true, conv_opts({1, 1}, {1, 1}, {1, 1}, 2)},
      {"conv_depthwise_stride2",
       {1, 4, 7, 7},
       {4, 1, 3, 3},
       true,
       conv_opts({2, 2}, {1, 1}, {1, 1}, 4)},
      {"conv_1x1_nobias", {2, 8, 5, 5}, {4, 8, 1, 1}, false, conv_opts({1, 1}, {0, 0})},
      {"conv_asymmetric", {1, 2, 7, 8}, {3, 2, 2, 3}, true, conv_opts({2, 1}, {1, 0}, {1, 2})},
      {"conv_mnist_5x5", {2, 1, 12, 12}, {4, 1, 5, 5}, true, conv_opts({1, 1}, {0, 0})},
      {"conv_16to32", {2, 16, 8, 8}, {32, 16, 3, 3}, true, conv_opts({1, 1}, {1, 1})},
      {"conv_transposed_input", {2, 3, 8, 7}, {4, 3, 3, 3}, true, conv_opts({1, 1}, {1, 1}), true},
  };
  for (const C& c : convs) {
    std::vector<std::string> ops = {"conv2d"};
    if (c.transposed_input) ops.push_back("transpose");
    cs.push_back({.name = c.name,
                  .ops = ops,
                  .inputs =
                      [c] {
                        Inputs in{uniform(c.x, 71), uniform(c.w, 72, -0.5f, 0.5f)};
                        if (c.bias) in.push_back(uniform({c.w[0]}, 73));
                        return in;
                      },
                  .fn =
                      [c](const Inputs& v) {
                        const Tensor x = c.transposed_input ? transpose(v[0], 2, 3) : v[0];
                        return Inputs{conv2d(x, v[1], c.bias ? v[2] : Tensor(), c.o)};
                      },
                  .tol = kGemmTol,
                  .grad = kConvGrad});
  }
}

void add_pooling(std::vector<OpCase>& cs) {
  struct P {
    const char* name;
    Shape x;
    Pool2dOptions o;
    bool transposed_input = false;
  };
  const std::vector<P> maxes = {
      {"maxpool_2x2", {2, 3, 8, 8}, pool_opts(2, 2, 0)},
      {"maxpool_3x3_s2_p1", {1, 2, 9, 9}, pool_opts(3, 2, 1)},
      {"maxpool_ceil", {1, 2, 7, 7}, pool_opts(2, 2, 0, 1, true)},
      {"maxpool_dilation2", {1, 2, 9, 9}, pool_opts(3, 1, 1, 2)},
      {"maxpool_dilation2_ceil_pad", {1, 1, 10, 10}, pool_opts(3, 2, 1, 2, true)},
      {"maxpool_transposed_input", {1, 2, 8, 6}, pool_opts(2, 2, 0), true},
  };
  for (const P& p : maxes) {
    std::vector<std::string> ops = {"max_pool2d"};
    if (p.transposed_input) ops.push_back("transpose");
    cs.push_back({.name = p.name,
                  .ops = ops,
                  .inputs = [p] { return Inputs{distinct(p.x, 81)}; },
                  .fn =
                      [p](const Inputs& v) {
                        const Tensor x = p.transposed_input ? transpose(v[0], 2, 3) : v[0];
                        return Inputs{max_pool2d(x, p.o)};
                      }});
  }
  const std::vector<P> avgs = {
      {"avgpool_2x2", {2, 3, 8, 8}, pool_opts(2, 2, 0)},
      {"avgpool_3x3_s2_p1_include_pad", {1, 2, 9, 9}, pool_opts(3, 2, 1, 1, false, true)},
      {"avgpool_3x3_s2_p1_exclude_pad", {1, 2, 9, 9}, pool_opts(3, 2, 1, 1, false, false)},
      {"avgpool_ceil_p1_include_pad", {1, 2, 8, 8}, pool_opts(3, 2, 1, 1, true, true)},
      {"avgpool_ceil_p1_exclude_pad", {1, 2, 8, 8}, pool_opts(3, 2, 1, 1, true, false)},
      {"avgpool_transposed_input", {1, 2, 8, 6}, pool_opts(2, 2, 0), true},
  };
  for (const P& p : avgs) {
    std::vector<std::string> ops = {"avg_pool2d"};
    if (p.transposed_input) ops.push_back("transpose");
    cs.push_back({.name = p.name,
                  .ops = ops,
                  .inputs = [p] { return Inputs{uniform(p.x, 82)}; },
                  .fn =
                      [p](const Inputs& v) {
                        const Tensor x = p.transposed_input ? transpose(v[0], 2, 3) : v[0];
                        return Inputs{avg_pool2d(x, p.o)};
                      }});
  }
  struct A {
    const char* name;
    Shape x;
    std::array<int64_t, 2> out;
  };
  const std::vector<A> adaptives = {
      {"adaptive_avgpool_7to3", {2, 3, 7, 7}, {3, 3}},
      {"adaptive_avgpool_global", {2, 3, 5, 5}, {1, 1}},
      {"adaptive_avgpool_5x7to2x3", {1, 2, 5, 7}, {2, 3}},
  };
  for (const A& a : adaptives) {
    cs.push_back({.name = a.name,
                  .ops = {"adaptive_avg_pool2d"},
                  .inputs = [a] { return Inputs{uniform(a.x, 83)}; },
                  .fn = [a](const Inputs& v) { return Inputs{adaptive_avg_pool2d(v[0], a.out)}; }});
  }
}

void add_batch_norm(std::vector<OpCase>& cs) {
  // Inputs: x, weight, bias (require grad), running_mean, running_var (updated in place in
  // training; returned as outputs 1 and 2 so they are compared too).
  auto inputs = [](const Shape& x, uint64_t seed) {
    const int64_t c = x[1];
    return Inputs{uniform(x, seed, -2.f, 2.f), uniform({c}, seed + 1, 0.5f, 1.5f),
                  uniform({c}, seed + 2), no_grad({c}, seed + 3),
                  no_grad({c}, seed + 4, 0.5f, 1.5f)};
  };
  // Without affine parameters: x, running_mean, running_var.
  auto inputs_no_affine = [](const Shape& x, uint64_t seed) {
    const int64_t c = x[1];
    return Inputs{uniform(x, seed, -2.f, 2.f), no_grad({c}, seed + 3),
                  no_grad({c}, seed + 4, 0.5f, 1.5f)};
  };
  for (bool training : {true, false}) {
    const std::string mode = training ? "train" : "eval";
    cs.push_back({.name = "batchnorm_" + mode,
                  .ops = {"batch_norm2d"},
                  .inputs =
                      [=] {
                        return inputs({4, 3, 5, 5}, 91);
                      },
                  .fn =
                      [=](const Inputs& v) {
                        Tensor rm = v[3], rv = v[4];
                        Tensor y = batch_norm2d(v[0], v[1], v[2], rm, rv, training, 0.3f);
                        return Inputs{y, rm, rv};
                      },
                  .grad = kBatchNormGrad});
    cs.push_back({.name = "batchnorm_" + mode + "_2d",
                  .ops = {"batch_norm2d"},
                  .inputs =
                      [=] {
                        return inputs({16, 5}, 92);
                      },
                  .fn =
                      [=](const Inputs& v) {
                        Tensor rm = v[3], rv = v[4];
                        Tensor y = batch_norm2d(v[0], v[1], v[2], rm, rv, training);
                        return Inputs{y, rm, rv};
                      },
                  .grad = kBatchNormGrad});
    cs.push_back({.name = "batchnorm_" + mode + "_no_affine",
                  .ops = {"batch_norm2d"},
                  .inputs =
                      [=] {
                        return inputs_no_affine({4, 3, 5, 5}, 93);
                      },
                  .fn =
                      [=](const Inputs& v) {
                        Tensor rm = v[1], rv = v[2];
                        Tensor y = batch_norm2d(v[0], Tensor(), Tensor(), rm, rv, training);
                        return Inputs{y, rm, rv};
                      },
                  .grad = kBatchNormGrad});
  }
  cs.push_back({.name = "batchnorm_train_no_running_stats",
                .ops = {"batch_norm2d"},
                .inputs =
                    [=] {
                      return inputs({6, 4, 3, 3}, 94);
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{batch_norm2d(v[0], v[1], v[2], Tensor(), Tensor(), true)};
                    },
                .grad = kBatchNormGrad});
  cs.push_back({.name = "batchnorm_train_large",
                .ops = {"batch_norm2d"},
                .inputs =
                    [=] {
                      return inputs({8, 16, 14, 14}, 95);
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor rm = v[3], rv = v[4];
                      Tensor y = batch_norm2d(v[0], v[1], v[2], rm, rv, true);
                      return Inputs{y, rm, rv};
                    },
                .grad = kLargeRowGrad});
}

void add_losses(std::vector<OpCase>& cs) {
  struct S {
    const char* name;
    Shape x;
    int dim;
    bool transposed_input = false;
  };
  const std::vector<S> shapes = {{"last", {4, 7}, -1},
                                 {"dim1_of_3d", {2, 5, 3}, 1},
                                 {"dim0", {6, 4}, 0},
                                 {"large", {64, 1000}, 1},
                                 {"transposed", {7, 4}, -1, true}};
  for (bool log_ : {false, true}) {
    const std::string op = log_ ? "log_softmax" : "softmax";
    for (const S& s : shapes) {
      std::vector<std::string> ops = {op};
      if (s.transposed_input) ops.push_back("transpose");
      cs.push_back({.name = op + "_" + s.name,
                    .ops = ops,
                    .inputs = [s] { return Inputs{uniform(s.x, 101, -3.f, 3.f)}; },
                    .fn =
                        [s, log_](const Inputs& v) {
                          const Tensor x = s.transposed_input ? transpose(v[0], 0, 1) : v[0];
                          return Inputs{log_ ? log_softmax(x, s.dim) : softmax(x, s.dim)};
                        },
                    .grad = shape_numel(s.x) > 10000 ? kLargeRowGrad : GradCheckOptions{}});
    }
  }
  struct CE {
    const char* name;
    int64_t n, classes;
    float smoothing;
    bool transposed_input = false;
  };
  const std::vector<CE> ces = {{"cross_entropy", 6, 5, 0.f},
                               {"cross_entropy_smoothing", 6, 5, 0.1f},
                               {"cross_entropy_large_smoothing", 64, 100, 0.1f},
                               {"cross_entropy_full_smoothing", 5, 4, 1.f},
                               {"cross_entropy_transposed_logits", 6, 5, 0.2f, true}};
  for (const CE& c : ces) {
    std::vector<std::string> ops = {"cross_entropy"};
    if (c.transposed_input) ops.push_back("transpose");
    cs.push_back(
        {.name = c.name,
         .ops = ops,
         .inputs =
             [c] {
               const Shape s = c.transposed_input ? Shape{c.classes, c.n} : Shape{c.n, c.classes};
               return Inputs{uniform(s, 102, -3.f, 3.f), targets(c.n, c.classes)};
             },
         .fn =
             [c](const Inputs& v) {
               const Tensor x = c.transposed_input ? transpose(v[0], 0, 1) : v[0];
               return Inputs{cross_entropy(x, v[1], c.smoothing)};
             },
         .grad = c.n * c.classes > 1000 ? kLargeRowGrad : GradCheckOptions{}});
  }
  // A small network end to end: the composition of linear, tanh and the loss.
  cs.push_back({.name = "mlp_cross_entropy",
                .ops = {"linear", "tanh", "cross_entropy"},
                .inputs =
                    [] {
                      return Inputs{uniform({8, 12}, 103), uniform({16, 12}, 104, -0.3f, 0.3f),
                                    uniform({16}, 105),    uniform({4, 16}, 106, -0.3f, 0.3f),
                                    uniform({4}, 107),     targets(8, 4)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor h = tanh(linear(v[0], v[1], v[2]));
                      return Inputs{cross_entropy(linear(h, v[3], v[4]), v[5], 0.1f)};
                    },
                .tol = kGemmTol});
}

void add_dropout(std::vector<OpCase>& cs) {
  struct D {
    const char* name;
    Shape x;
    float p;
    bool training;
    bool transposed_input = false;
  };
  const std::vector<D> ds = {{"dropout_p03", {4, 50}, 0.3f, true},
                             {"dropout_p05_large", {300, 257}, 0.5f, true},
                             {"dropout_eval", {4, 50}, 0.3f, false},
                             {"dropout_p09", {4, 50}, 0.9f, true},
                             {"dropout_transposed", {50, 4}, 0.4f, true, true}};
  for (const D& d : ds) {
    std::vector<std::string> ops = {"dropout"};
    if (d.transposed_input) ops.push_back("transpose");
    cs.push_back({.name = d.name,
                  .ops = ops,
                  .inputs = [d] { return Inputs{uniform(d.x, 111)}; },
                  .fn =
                      [d](const Inputs& v) {
                        const Tensor x = d.transposed_input ? transpose(v[0], 0, 1) : v[0];
                        return Inputs{dropout(x, d.p, d.training, 1234, 7)};
                      },
                  .tol = 1e-12,
                  .grad = shape_numel(d.x) > 10000 ? kLargeGrad : GradCheckOptions{}});
  }
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cs;
  add_elementwise(cs);
  add_reductions(cs);
  add_shape_ops(cs);
  add_linear(cs);
  add_conv(cs);
  add_pooling(cs);
  add_batch_norm(cs);
  add_losses(cs);
  add_dropout(cs);
  return cs;
}

void expect_all_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol,
                      const std::string& what, bool undefined_allowed) {
  ASSERT_EQ(got.size(), want.size()) << what << ": count";
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string tag = fmt::format("{} {}", what, i);
    ASSERT_EQ(got[i].defined(), want[i].defined()) << tag << ": defined on one side only";
    if (!want[i].defined()) {
      EXPECT_TRUE(undefined_allowed) << tag << " is undefined";
      continue;
    }
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << tag << ": dtype";
    expect_close(got[i], want[i], tol, tag);
  }
}

}  // namespace

void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

std::vector<std::string> declared_ops(const std::string& source_dir) {
  static const char* const headers[] = {"conv", "elementwise", "linear", "loss", "norm",
                                        "pool", "random",      "reduce", "shape"};
  const std::regex decl(R"(^(?:Tensor|void|double)\s+([A-Za-z_][A-Za-z0-9_]*)\()");
  std::set<std::string> names;
  for (const char* h : headers) {
    const std::string path = fmt::format("{}/core/ops/{}.h", source_dir, h);
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, decl)) names.insert(m[1]);
  }
  return {names.begin(), names.end()};
}

OpCaseResult evaluate_op_case(const OpCase& c, Device device) {
  const std::vector<Tensor> host = c.inputs();
  std::vector<Tensor> in;
  for (const Tensor& h : host) in.push_back(leaf_on(h, device));
  const std::vector<Tensor> out = c.fn(in);
  OpCaseResult r;
  if (!out.empty() && out[0].requires_grad()) {
    EXPECT_EQ(out[0].device(), device) << c.name << ": output 0 left the device";
    const Tensor w = random_tensor(out[0].shape(), 991, 0.5f, 1.5f);
    backward(out[0], w.to(out[0].device()));
  }
  for (const Tensor& o : out) r.outputs.push_back(o.defined() ? o.to(Device::cpu()) : o);
  const bool differentiated = !out.empty() && out[0].requires_grad();
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = in[k];
    const bool wanted = differentiated && t.defined() && t.requires_grad();
    if (wanted && !t.grad().defined())
      ADD_FAILURE() << c.name << ": input " << k << " requires grad but got none on "
                    << device.str();
    r.grads.push_back(wanted && t.grad().defined() ? t.grad().to(Device::cpu()) : Tensor());
  }
  return r;
}

OpCaseResult evaluate_op_case_on_ref(const OpCase& c) {
  BackendOverride ref(ref_backend());
  return evaluate_op_case(c, Device::cpu());
}

void expect_op_case_matches_ref(const OpCase& c, Device device) {
  const OpCaseResult want = evaluate_op_case_on_ref(c);
  const OpCaseResult got = evaluate_op_case(c, device);
  ASSERT_FALSE(want.outputs.empty()) << c.name << " has no outputs";
  expect_all_close(got.outputs, want.outputs, c.tol, c.name + " output", false);
  expect_all_close(got.grads, want.grads, c.tol, c.name + " gradient of input", true);
}

void expect_op_case_gradients(const OpCase& c, Device device) {
  if (!c.finite_differences) return;
  const std::vector<Tensor> host = c.inputs();
  const bool any = std::any_of(host.begin(), host.end(),
                               [](const Tensor& t) { return t.defined() && t.requires_grad(); });
  if (!any) return;
  expect_gradients_match_on(
      device, [&c](const std::vector<Tensor>& v) { return c.fn(v)[0]; }, host, c.grad);
}

}  // namespace dplab::test
