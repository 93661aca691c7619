// linear and matmul: hand-computed values, finite-difference gradients, transposed-view
// operands, and the fast GEMM kernels against the reference on a table of shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_close;
using test::random_tensor;

TEST(Linear, HandComputedValues) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {2, 2});
  Tensor w = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor b = Tensor::from_vector({0.5f, -1, 2}, {3});
  EXPECT_EQ(linear(x, w, b).to_vector(), (std::vector<float>{1.5f, 1, 5, 3.5f, 3, 9}));
  EXPECT_EQ(linear(x, w, Tensor()).to_vector(), (std::vector<float>{1, 2, 3, 3, 4, 7}));
}

TEST(Matmul, HandComputedValues) {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
  EXPECT_EQ(matmul(a, b).to_vector(), (std::vector<float>{4, 5, 10, 11}));
  // Transposed views are used without copies but must give the same products.
  Tensor at = Tensor::from_vector({1, 4, 2, 5, 3, 6}, {3, 2}).transpose(0, 1);
  ASSERT_FALSE(at.is_contiguous());
  EXPECT_EQ(matmul(at, b).to_vector(), (std::vector<float>{4, 5, 10, 11}));
  Tensor bt = Tensor::from_vector({1, 0, 1, 0, 1, 1}, {2, 3}).transpose(0, 1);
  EXPECT_EQ(matmul(at, bt).to_vector(), (std::vector<float>{4, 5, 10, 11}));
}

TEST(Linear, RejectsBadInputsWithClearErrors) {
  try {
    linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), Tensor());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input features 3 != weight in_features 5"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}), Tensor::zeros({5})), Error);
  EXPECT_THROW(linear(Tensor::zeros({3}), Tensor::zeros({4, 3}), Tensor()), Error);
  EXPECT_THROW(linear(Tensor::zeros({2, 3}, DType::f16), Tensor::zeros({4, 3}), Tensor()), Error);
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}), Tensor::zeros({2, 3})), Error);
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  for (bool bias : {true, false}) {
    std::vector<Tensor> in{random_tensor({3, 5}, 1), random_tensor({4, 5}, 2),
                           bias ? random_tensor({4}, 3) : Tensor()};
    for (auto& t : in)
      if (t.defined()) t.set_requires_grad(true);
    test::expect_gradients_match(
        [](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); }, in);
  }
}

TEST(Matmul, GradientsMatchFiniteDifferences) {
  std::vector<Tensor> in{random_tensor({3, 4}, 4), random_tensor({4, 5}, 5)};
  for (auto& t : in) t.set_requires_grad(true);
  test::expect_gradients_match([](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); }, in);
  // Through transposed views: the gradient reaches the underlying leaf in its own layout.
  std::vector<Tensor> tin{random_tensor({4, 3}, 6), random_tensor({5, 4}, 7)};
  for (auto& t : tin) t.set_requires_grad(true);
  test::expect_gradients_match(
      [](const std::vector<Tensor>& v) {
        return matmul(transpose(v[0], 0, 1), transpose(v[1], 0, 1));
      },
      tin);
}

// ---- fast GEMM against the reference -------------------------------------------------------

struct GemmCase {
  const char* name;
  int64_t M, N, K;
  bool ta, tb;
  float alpha, beta;
};

void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.name;
}

const GemmCase kCases[] = {
    {"nn", 7, 5, 3, false, false, 1.f, 0.f},
    {"nt", 64, 10, 512, false, true, 1.f, 0.f},  // mnist_cnn's classifier
    {"tn", 10, 512, 64, true, false, 1.f, 0.f},  // its weight gradient
    {"tt_alpha_beta", 9, 13, 11, true, true, 0.5f, 2.f},
    {"vector_row", 1, 17, 33, false, false, 1.f, 1.f},
    {"vector_col", 19, 1, 8, false, true, -1.f, 0.f},
    {"odd_large", 67, 129, 95, false, false, 1.f, 0.f},
};

class GemmTable : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTable, FastMatchesReference) {
  const GemmCase& c = GetParam();
  const Tensor a = random_tensor(c.ta ? Shape{c.K, c.M} : Shape{c.M, c.K}, 41);
  const Tensor b = random_tensor(c.tb ? Shape{c.N, c.K} : Shape{c.K, c.N}, 42);
  const Tensor c0 = c.beta == 0.f ? Tensor::full({c.M, c.N}, NAN) : random_tensor({c.M, c.N}, 43);
  Tensor want = c0.clone(), got = c0.clone();
  ref_backend().gemm.gemm(c.ta, c.tb, c.alpha, a, b, c.beta, want);
  cpu_backend().gemm.gemm(c.ta, c.tb, c.alpha, a, b, c.beta, got);
  for (float v : want.to_vector()) ASSERT_FALSE(std::isnan(v)) << "beta = 0 must not read c";
  expect_close(got, want, 1e-10, c.name);
}

TEST_P(GemmTable, BiasHelpersMatchReference) {
  const GemmCase& c = GetParam();
  const Tensor y0 = random_tensor({c.M, c.N}, 44), bias = random_tensor({c.N}, 45);
  Tensor want = y0.clone(), got = y0.clone();
  ref_backend().gemm.add_row_bias(want, bias);
  cpu_backend().gemm.add_row_bias(got, bias);
  expect_close(got, want, 0, std::string(c.name) + " add_row_bias");
  Tensor s_want = Tensor::full({c.N}, NAN), s_got = Tensor::full({c.N}, NAN);
  ref_backend().gemm.sum_rows(y0, s_want);
  cpu_backend().gemm.sum_rows(y0, s_got);
  expect_close(s_got, s_want, 1e-12, std::string(c.name) + " sum_rows");
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Gemm, ReferenceHandComputed) {
  // c = 2 * a^T b + 1 * c with a^T = [[1, 2], [3, 4]], b = I.
  Tensor a = Tensor::from_vector({1, 3, 2, 4}, {2, 2});
  Tensor b = Tensor::from_vector({1, 0, 0, 1}, {2, 2});
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor c = Tensor::from_vector({1, 1, 1, 1}, {2, 2});
    be->gemm.gemm(true, false, 2.f, a, b, 1.f, c);
    EXPECT_EQ(c.to_vector(), (std::vector<float>{3, 5, 7, 9})) << be->name;
  }
}

TEST(Gemm, RowPaddedOperands) {
  // Operands that are column slices of wider matrices (row stride > row length).
  const Tensor aw = random_tensor({6, 9}, 51), bw = random_tensor({5, 11}, 52);
  const Tensor a = aw.slice(1, 2, 7), b = bw.slice(1, 1, 4);  // [6, 5] and [5, 3]
  Tensor want = Tensor::empty({6, 3}), got = Tensor::empty({6, 3});
  ref_backend().gemm.gemm(false, false, 1.f, a.contiguous(), b.contiguous(), 0.f, want);
  cpu_backend().gemm.gemm(false, false, 1.f, a, b, 0.f, got);
  expect_close(got, want, 1e-10, "row-padded");
}

}  // namespace
}  // namespace dplab
