// Fast (cpu_backend) against reference (ref_backend) kernels, table-driven like ggml's
// test-backend-ops: each case builds its inputs deterministically, runs the kernel on a
// backend and returns the outputs; the test compares the two backends' outputs by normalised
// error. Shapes include odd sizes, sizes large enough to take the OpenMP paths, broadcasts
// and non-contiguous (transposed / sliced) inputs.
#include <gtest/gtest.h>

#include <functional>

#include "common/harness.h"

namespace dplab {
namespace {

using test::random_tensor;

struct Case {
  std::string name;
  std::function<std::vector<Tensor>(const Backend&)> run;
  double tol = 1e-10;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

Tensor out_f32(const Shape& s) {
  return Tensor::empty(s, DType::f32);
}

// A [rows, cols] tensor stored transposed: non-contiguous with the same values on every call.
Tensor transposed(const Shape& s, uint64_t seed) {
  return random_tensor({s[1], s[0]}, seed).transpose(0, 1);
}

std::vector<Case> make_cases() {
  std::vector<Case> cs;
  const std::vector<std::pair<UnaryOp, const char*>> unaries = {
      {UnaryOp::neg, "neg"},
      {UnaryOp::exp, "exp"},
      {UnaryOp::log, "log"},
      {UnaryOp::sqrt, "sqrt"},
      {UnaryOp::abs, "abs"},
      {UnaryOp::square, "square"},
      {UnaryOp::relu, "relu"},
      {UnaryOp::sigmoid, "sigmoid"},
      {UnaryOp::tanh, "tanh"},
      {UnaryOp::add_scalar, "add_scalar"},
      {UnaryOp::mul_scalar, "mul_scalar"}};
  for (auto [op, name] : unaries) {
    const bool positive = op == UnaryOp::log || op == UnaryOp::sqrt;
    for (Shape s : {Shape{7}, Shape{3, 5, 17}, Shape{200, 257}}) {
      cs.push_back({fmt::format("unary_{}_{}", name, shape_str(s)), [=](const Backend& b) {
                      Tensor x = random_tensor(s, 3, positive ? 0.1f : -3.f, 3.f);
                      Tensor y = out_f32(s);
                      b.ew.unary(op, 0.7f, x, y);
                      return std::vector<Tensor>{y};
                    }});
    }
    cs.push_back(
        {fmt::format("unary_{}_transposed", name), [=](const Backend& b) {
           Tensor x = random_tensor({13, 9}, 4, positive ? 0.1f : -2.f, 2.f).transpose(0, 1);
           Tensor y = out_f32({9, 13});
           b.ew.unary(op, 0.7f, x, y);
           return std::vector<Tensor>{y};
         }});
  }
  const std::vector<std::pair<BinaryOp, const char*>> binaries = {
      {BinaryOp::add, "add"},
      {BinaryOp::sub, "sub"},
      {BinaryOp::mul, "mul"},
      {BinaryOp::div, "div"},
      {BinaryOp::relu_backward, "relu_backward"},
      {BinaryOp::sigmoid_backward, "sigmoid_backward"},
      {BinaryOp::tanh_backward, "tanh_backward"},
      {BinaryOp::sqrt_backward, "sqrt_backward"},
      {BinaryOp::abs_backward, "abs_backward"},
      {BinaryOp::square_backward, "square_backward"},
      {BinaryOp::add_relu, "add_relu"}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{13, 17}, {13, 17}},    {{2, 3, 5, 7}, {3, 1, 1}}, {{33, 10}, {10}},
      {{10}, {33, 10}},        {{5, 1, 7}, {1, 4, 1}},    {{6, 5}, {}},
      {{64, 16, 33}, {16, 1}}, {{300, 200}, {300, 200}},  {{1}, {4, 1, 3}}};
  for (auto [op, name] : binaries) {
    for (auto [sa, sb] : shapes) {
      cs.push_back({fmt::format("binary_{}_{}_{}", name, shape_str(sa), shape_str(sb)),
                    [=](const Backend& b) {
                      Tensor x = random_tensor(sa, 5, -2.f, 2.f);
                      Tensor z = random_tensor(sb, 6, 0.5f, 2.f);  // divisor-safe
                      Tensor y = out_f32(broadcast_shapes(sa, sb, "test"));
                      b.ew.binary(op, x, z, y);
                      return std::vector<Tensor>{y};
                    }});
    }
    cs.push_back({fmt::format("binary_{}_noncontiguous", name), [=](const Backend& b) {
                    Tensor x = transposed({11, 6}, 7);
                    Tensor z = random_tensor({11, 12}, 8, 0.5f, 2.f).slice(1, 3, 9);
                    Tensor y = out_f32({11, 6});
                    b.ew.binary(op, x, z, y);
                    return std::vector<Tensor>{y};
                  }});
  }
  // casts through the copy kernel, both directions, odd and parallel sizes
  for (DType from : {DType::f32, DType::bf16, DType::f16})
    for (DType to : {DType::f32, DType::bf16, DType::f16})
      for (int64_t n : {7, 70001}) {
        cs.push_back({fmt::format("copy_{}_to_{}_{}", dtype_name(from), dtype_name(to), n),
                      [=](const Backend& b) {
                        Tensor x = random_tensor({n}, 9, -70000.f, 70000.f).to(from);
                        Tensor y = Tensor::empty({n}, to);
                        b.ew.copy(x, y);
                        return std::vector<Tensor>{y.to(DType::f32)};
                      },
                      0.0});
      }
  // sums over dims (keepdim-shaped outputs), incl. non-contiguous
  const std::vector<std::pair<Shape, Shape>> sums = {{{7}, {1}},
                                                     {{5, 9}, {1, 9}},
                                                     {{5, 9}, {5, 1}},
                                                     {{4, 6, 5, 3}, {1, 6, 1, 1}},
                                                     {{4, 6, 5, 3}, {4, 1, 5, 3}},
                                                     {{4, 6, 5, 3}, {1, 1, 1, 1}},
                                                     {{4, 6, 5, 3}, {4, 1, 5, 1}},
                                                     {{300, 257}, {1, 257}},
                                                     {{300, 257}, {300, 1}},
                                                     {{64, 16, 8, 8}, {1, 16, 1, 1}},
                                                     {{2, 3}, {2, 3}},
                                                     {{100000}, {1}}};
  for (auto [sx, sy] : sums) {
    cs.push_back({fmt::format("sum_{}_to_{}", shape_str(sx), shape_str(sy)),
                  [=](const Backend& b) {
                    Tensor x = random_tensor(sx, 10);
                    Tensor y = out_f32(sy);
                    b.reduce.sum(x, y, 0.5f);
                    return std::vector<Tensor>{y};
                  },
                  1e-9});
  }
  cs.push_back({"sum_transposed", [](const Backend& b) {
                  Tensor x = transposed({17, 23}, 11);
                  Tensor y = out_f32({17, 1});
                  b.reduce.sum(x, y, 1.f);
                  return std::vector<Tensor>{y};
                }});
  for (auto [s, dim] : std::vector<std::pair<Shape, int>>{
           {{9}, 0}, {{5, 11}, 1}, {{5, 11}, 0}, {{3, 7, 5}, 1}, {{400, 100}, 1}}) {
    cs.push_back({fmt::format("argmax_{}_dim{}", shape_str(s), dim),
                  [=](const Backend& b) {
                    Tensor x = random_tensor(s, 12);
                    Shape so = s;
                    so[dim] = 1;
                    Tensor y = Tensor::empty(so, DType::i64);
                    b.reduce.argmax(x, dim, y);
                    return std::vector<Tensor>{y};
                  },
                  0.0});
  }
  cs.push_back({"sum_of_squares", [](const Backend& b) {
                  Tensor x = random_tensor({70001}, 13);
                  Tensor xt = transposed({30, 7}, 14);
                  return std::vector<Tensor>{
                      Tensor::scalar(static_cast<float>(b.reduce.sum_of_squares(x))),
                      Tensor::scalar(static_cast<float>(b.reduce.sum_of_squares(xt)))};
                }});
  // batch norm: train (with running stats), eval, backward in both modes
  for (Shape s : {Shape{4, 3, 5, 7}, Shape{8, 16, 16, 16}, Shape{6, 5}}) {
    const int64_t c = s[1];
    cs.push_back(
        {fmt::format("batch_norm_{}", shape_str(s)),
         [=](const Backend& b) {
           Tensor x = random_tensor(s, 15, -1.f, 3.f);
           Tensor w = random_tensor({c}, 16, 0.5f, 1.5f), bias = random_tensor({c}, 17);
           Tensor rm = random_tensor({c}, 18), rv = random_tensor({c}, 19, 0.5f, 2.f);
           Tensor y = out_f32(s), mean = out_f32({c}), invstd = out_f32({c});
           b.norm.batch_norm_forward_train(x, w, bias, rm, rv, 0.1f, 1e-5f, y, mean, invstd);
           Tensor ye = out_f32(s);
           b.norm.batch_norm_forward_eval(x, w, bias, rm, rv, 1e-5f, ye);
           Tensor dy = random_tensor(s, 20);
           Tensor dx = out_f32(s), dw = out_f32({c}), db = out_f32({c});
           b.norm.batch_norm_backward(dy, x, w, mean, invstd, 1e-5f, true, dx, dw, db);
           Tensor dxe = out_f32(s), none;
           b.norm.batch_norm_backward(dy, x, Tensor(), mean, invstd, 1e-5f, false, dxe, none, none);
           return std::vector<Tensor>{y, mean, invstd, rm, rv, ye, dx, dw, db, dxe};
         },
         1e-9});
  }
  // softmax / log_softmax along the last and a middle dim; cross-entropy with smoothing
  for (auto [s, dim] :
       std::vector<std::pair<Shape, int>>{{{5, 10}, 1}, {{300, 77}, 1}, {{3, 4, 5}, 1}}) {
    for (bool lg : {false, true}) {
      cs.push_back({fmt::format("{}softmax_{}_dim{}", lg ? "log_" : "", shape_str(s), dim),
                    [=](const Backend& b) {
                      Tensor x = random_tensor(s, 21, -5.f, 5.f);
                      Tensor y = out_f32(s), dx = out_f32(s);
                      b.loss.softmax_forward(x, dim, lg, y);
                      b.loss.softmax_backward(y, random_tensor(s, 22), dim, lg, dx);
                      return std::vector<Tensor>{y, dx};
                    },
                    1e-10});
    }
  }
  for (auto [n, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {7, 10}, {512, 100}}) {
    for (float sm : {0.f, 0.1f}) {
      cs.push_back({fmt::format("cross_entropy_{}x{}_s{}", n, c, sm),
                    [=](const Backend& b) {
                      Tensor x = random_tensor({n, c}, 23, -4.f, 4.f);
                      std::vector<int64_t> t(n);
                      for (int64_t i = 0; i < n; ++i) t[i] = (i * 7 + 3) % c;
                      Tensor tg = Tensor::from_vector_i64(t, {n});
                      Tensor loss = out_f32({}), lse = out_f32({n}), dx = out_f32({n, c});
                      b.loss.cross_entropy_forward(x, tg, sm, loss, lse);
                      b.loss.cross_entropy_backward(x, tg, lse, sm, 0.3f, dx);
                      return std::vector<Tensor>{loss, lse, dx};
                    },
                    1e-10});
    }
  }
  // dropout and uniform: bitwise equal (same Philox draws)
  for (int64_t n : {5, 4097, 70003}) {
    cs.push_back({fmt::format("dropout_{}", n),
                  [=](const Backend& b) {
                    Tensor x = random_tensor({n}, 24);
                    Tensor y = out_f32({n}), m = Tensor::empty({n}, DType::u8), dx = out_f32({n});
                    b.random.dropout_forward(x, 0.3f, 42, 7, y, m);
                    b.random.dropout_backward(x, m, 0.3f, dx);
                    Tensor u = out_f32({n});
                    b.random.uniform(42, 8, -2.f, 3.f, u);
                    return std::vector<Tensor>{y, m, dx, u};
                  },
                  0.0});
  }
  return cs;
}

// add_int (integer counters): exact on both backends, strided views and i64 wrap-around included.
TEST(ElementwiseKernels, AddIntIsExactOnEveryBackend) {
  for (const Backend* b : {&ref_backend(), &cpu_backend()}) {
    SCOPED_TRACE(b->name);
    const int64_t big = int64_t(1) << 40;  // far beyond f32's exact integers
    Tensor c = Tensor::from_vector_i64({big, -3, INT64_MAX, 7}, {4});
    b->ew.add_int(c, 2);
    EXPECT_EQ(c.to_vector_i64(), (std::vector<int64_t>{big + 2, -1, INT64_MIN + 1, 9}));
    Tensor m = Tensor::from_vector_i64({10, 20, 30, 40}, {2, 2});
    Tensor col = m.select(1, 0);  // m[0][0] and m[1][0]: a strided view
    ASSERT_FALSE(col.is_contiguous());
    b->ew.add_int(col, -5);
    EXPECT_EQ(m.to_vector_i64(), (std::vector<int64_t>{5, 20, 25, 40}));
    Tensor i = Tensor::from_vector_i64({1, 2}, {2}).to(DType::i32);
    b->ew.add_int(i, 40);
    EXPECT_EQ(i.to_vector_i64(), (std::vector<int64_t>{41, 42}));
    Tensor f = Tensor::zeros({2});
    EXPECT_THROW(b->ew.add_int(f, 1), Error);
  }
}

class BackendParity : public ::testing::TestWithParam<Case> {};

TEST_P(BackendParity, FastMatchesReference) {
  const Case& c = GetParam();
  auto want = c.run(ref_backend());
  auto got = c.run(cpu_backend());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << c.name << " output " << i;
    if (c.tol == 0.0) {
      EXPECT_EQ(got[i].to_vector(), want[i].to_vector()) << c.name << " output " << i;
    } else {
      test::expect_close(got[i], want[i], c.tol, c.name + " output " + std::to_string(i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, BackendParity, ::testing::ValuesIn(make_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace dplab
