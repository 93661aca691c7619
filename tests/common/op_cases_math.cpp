// Op cases: element-wise maps, casts, reductions and shape ops.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/op_case_inputs.h"

namespace dplab::test::cases {

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

  // relu(a + b): a away from zero by 0.2 or more and b within 0.1, so the sum never comes
  // within a finite-difference step of the kink; broadcast b is summed back to its shape.
  for (const Shapes& s : {Shapes{"same", {4, 6}, {4, 6}}, Shapes{"bcast_trailing", {33, 10}, {10}},
                          Shapes{"large", {256, 300}, {256, 300}}}) {
    cs.push_back({.name = fmt::format("add_relu_{}", s.name),
                  .ops = {"add_relu"},
                  .inputs =
                      [=] {
                        return Inputs{away_from_zero(s.a, 15), uniform(s.b, 16, -0.1f, 0.1f)};
                      },
                  .fn = [](const Inputs& v) { return Inputs{add_relu(v[0], v[1])}; },
                  .grad = shape_numel(s.a) > 10000 ? kLargeGrad : GradCheckOptions{}});
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
  // Integer counters (add_int_, no autograd): i64 and i32, a strided view included; exact.
  for (DType t : {DType::i64, DType::i32}) {
    cs.push_back({.name = fmt::format("add_int_inplace_{}", dtype_name(t)),
                  .ops = {"add_int_"},
                  .inputs =
                      [t] {
                        std::vector<int64_t> v(6 * 7);
                        for (size_t i = 0; i < v.size(); ++i)
                          v[i] = int64_t((i * 37) % 101) - 50 + 1000000;
                        return Inputs{Tensor::from_vector_i64(v, {6, 7}).to(t)};
                      },
                  .fn =
                      [](const Inputs& v) {
                        Tensor c = v[0].clone();
                        add_int_(c, 3);
                        Tensor col = c.select(1, 2);  // a strided view
                        add_int_(col, -1000);
                        return Inputs{c};
                      },
                  .tol = 0});
  }
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

}  // namespace dplab::test::cases
