// max_pool2d, avg_pool2d, adaptive_avg_pool2d: PyTorch's output-size rule, hand-computed values,
// finite-difference gradients, and the fast kernels (oneDNN, and the OpenMP fallback loops)
// against the reference on a table of shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_close;
using test::random_tensor;

Tensor iota(const Shape& s, float start = 1.f) {
  std::vector<float> v(shape_numel(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_vector(v, s);
}

// Distinct values 0.05 apart in shuffled order: max pooling stays differentiable under the
// gradient checker's +-0.01 perturbations (no near-ties inside a window).
Tensor distinct_tensor(const Shape& s, uint64_t seed) {
  const int64_t n = shape_numel(s);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i) - 0.025f * n;
  PhiloxStream rng(seed, 3);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(v[i], v[static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
  return Tensor::from_vector(v, s);
}

Pool2dOptions popts(int64_t k, int64_t s, int64_t p = 0, bool ceil = false, int64_t d = 1,
                    bool include_pad = true) {
  Pool2dOptions o;
  o.kernel = {k, k};
  o.stride = {s, s};
  o.padding = {p, p};
  o.dilation = {d, d};
  o.ceil_mode = ceil;
  o.count_include_pad = include_pad;
  return o;
}

Pool2dParams params(const Pool2dOptions& o) {
  Pool2dParams p;
  p.kernel_h = o.kernel[0], p.kernel_w = o.kernel[1];
  p.stride_h = o.stride[0] ? o.stride[0] : o.kernel[0];
  p.stride_w = o.stride[1] ? o.stride[1] : o.kernel[1];
  p.pad_h = o.padding[0], p.pad_w = o.padding[1];
  p.dilation_h = o.dilation[0], p.dilation_w = o.dilation[1];
  p.ceil_mode = o.ceil_mode;
  p.count_include_pad = o.count_include_pad;
  return p;
}

TEST(Pool2d, OutputSizeRule) {
  // floor mode
  EXPECT_EQ(pool_out_size(28, 2, 2, 0, 1, false), 14);
  EXPECT_EQ(pool_out_size(5, 2, 2, 0, 1, false), 2);
  EXPECT_EQ(pool_out_size(6, 3, 2, 0, 1, false), 2);
  EXPECT_EQ(pool_out_size(7, 3, 2, 1, 2, false), 3);  // effective kernel 5
  // ceil mode adds the partial window...
  EXPECT_EQ(pool_out_size(5, 2, 2, 0, 1, true), 3);
  EXPECT_EQ(pool_out_size(6, 3, 2, 0, 1, true), 3);
  EXPECT_EQ(pool_out_size(4, 2, 2, 1, 1, true), 3);
  // ...unless it would start in the right padding: 3 + pad 1, k 2, s 2 gives 2 not 3.
  EXPECT_EQ(pool_out_size(3, 2, 2, 1, 1, true), 2);
  EXPECT_EQ(pool_out_size(112, 3, 2, 1, 1, false), 56);  // ResNet stem
}

TEST(MaxPool2d, HandComputedValues) {
  Tensor x = Tensor::from_vector({1, 5, 2, 0, 3, 4, 8, 6, 9, 7, 10, 11, 12, 0, 1, 2}, {1, 1, 4, 4});
  EXPECT_EQ(max_pool2d(x, popts(2, 0)).to_vector(), (std::vector<float>{5, 8, 12, 11}));
  Tensor x3 = iota({1, 1, 3, 3});
  EXPECT_EQ(max_pool2d(x3, popts(2, 2)).to_vector(), (std::vector<float>{5}));
  EXPECT_EQ(max_pool2d(x3, popts(2, 2, 0, true)).to_vector(), (std::vector<float>{5, 6, 8, 9}));
  // padding never wins even where every input is negative
  Tensor neg = iota({1, 1, 3, 3}, -20);
  EXPECT_EQ(max_pool2d(neg, popts(2, 2, 1)).to_vector(), (std::vector<float>{-20, -18, -14, -12}));
  // dilation 2 on 4x4: window taps {0, 2} in each dim
  EXPECT_EQ(max_pool2d(iota({1, 1, 4, 4}), popts(2, 1, 0, false, 2)).to_vector(),
            (std::vector<float>{11, 12, 15, 16}));
  // reference argmax: flat index h * W + w in the input plane
  Tensor y = Tensor::empty({1, 1, 2, 2}), ws;
  ref_backend().pool.max_pool2d_forward(x, y, &ws, params(popts(2, 0)));
  EXPECT_EQ(ws.to_vector_i64(), (std::vector<int64_t>{1, 6, 12, 11}));
}

TEST(MaxPool2d, GradientRoutesToArgmax) {
  Tensor x = Tensor::from_vector({1, 5, 2, 0, 3, 4, 8, 6, 9, 7, 10, 11, 12, 0, 1, 2}, {1, 1, 4, 4})
                 .set_requires_grad(true);
  Tensor y = max_pool2d(x, popts(2, 0));
  backward(y, Tensor::from_vector({1, 2, 3, 4}, {1, 1, 2, 2}));
  EXPECT_EQ(x.grad().to_vector(),
            (std::vector<float>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 3, 0, 0, 0}));
  // overlapping windows (stride 1) sum into a shared argmax
  Tensor z = Tensor::from_vector({0, 0, 0, 0, 9, 0, 0, 0, 0}, {1, 1, 3, 3}).set_requires_grad(true);
  backward(max_pool2d(z, popts(2, 1)), Tensor::ones({1, 1, 2, 2}));
  EXPECT_EQ(z.grad().to_vector()[4], 4.f);
}

TEST(AvgPool2d, HandComputedValues) {
  Tensor x = iota({1, 1, 3, 3});
  EXPECT_EQ(avg_pool2d(x, popts(2, 1)).to_vector(), (std::vector<float>{3, 4, 6, 7}));
  EXPECT_EQ(avg_pool2d(x, popts(2, 2, 1)).to_vector(),
            (std::vector<float>{0.25f, 1.25f, 2.75f, 7}));
  EXPECT_EQ(avg_pool2d(x, popts(2, 2, 1, false, 1, false)).to_vector(),
            (std::vector<float>{1, 2.5f, 5.5f, 7}));
  // ceil mode with count_include_pad: the partial windows divide by their clipped size.
  EXPECT_EQ(avg_pool2d(x, popts(2, 2, 0, true)).to_vector(),
            (std::vector<float>{3, 4.5f, 7.5f, 9}));
  // ceil mode + padding: the last window hangs past the right padding and its divisor is
  // clipped to the padded input.
  Tensor x4 = iota({1, 1, 1, 4});
  Pool2dOptions o = popts(3, 2, 1, true);
  o.kernel = {1, 3};
  o.stride = {1, 2};
  o.padding = {0, 1};
  // W=4, k=3, s=2, p=1, ceil: out = 3; windows [-1, 2) -> (1+2)/3, [1, 4) -> (2+3+4)/3,
  // [3, 6) clipped to [3, 5) -> 4/2.
  EXPECT_EQ(avg_pool2d(x4, o).to_vector(), (std::vector<float>{1, 3, 2}));
  for (const Backend* be : {&ref_backend(), &cpu_backend()}) {
    Tensor y = Tensor::empty({1, 1, 2, 2});
    be->pool.avg_pool2d_forward(x, y, params(popts(2, 2, 0, true)));
    EXPECT_EQ(y.to_vector(), (std::vector<float>{3, 4.5f, 7.5f, 9})) << be->name;
  }
}

TEST(AdaptiveAvgPool2d, HandComputedValues) {
  Tensor x = iota({1, 1, 3, 3});
  EXPECT_EQ(adaptive_avg_pool2d(x, {2, 2}).to_vector(), (std::vector<float>{3, 4, 6, 7}));
  EXPECT_EQ(adaptive_avg_pool2d(x, {1, 1}).to_vector(), (std::vector<float>{5}));
  // 5 -> 3: windows [0, 2), [1, 4), [3, 5)
  EXPECT_EQ(adaptive_avg_pool2d(iota({1, 1, 1, 5}), {1, 3}).to_vector(),
            (std::vector<float>{1.5f, 3, 4.5f}));
  // upsampling: 2 -> 3 repeats the middle
  EXPECT_EQ(adaptive_avg_pool2d(iota({1, 1, 1, 2}), {1, 3}).to_vector(),
            (std::vector<float>{1, 1.5f, 2}));
}

TEST(Pool2d, RejectsBadInputsWithClearErrors) {
  Tensor x = Tensor::zeros({1, 1, 4, 4});
  EXPECT_THROW(max_pool2d(x, popts(2, 2, 2)), Error);  // padding > kernel / 2
  EXPECT_THROW(max_pool2d(x, popts(0, 1)), Error);
  EXPECT_THROW(max_pool2d(x, popts(5, 1)), Error);  // kernel larger than input
  EXPECT_THROW(max_pool2d(Tensor::zeros({4, 4}), popts(2, 2)), Error);
  EXPECT_THROW(avg_pool2d(x, popts(2, 2, 0, false, 2)), Error);  // dilation on avg
  EXPECT_THROW(avg_pool2d(x.to(DType::i64), popts(2, 2)), Error);
  EXPECT_THROW(adaptive_avg_pool2d(x, {0, 2}), Error);
}

// ---- the table -----------------------------------------------------------------------------

struct PoolCase {
  const char* name;
  int64_t N, C, H, W;
  int64_t k, s, p, d;
  bool ceil;
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << c.name;
}

const PoolCase kCases[] = {
    {"k2s2", 1, 2, 6, 6, 2, 2, 0, 1, false},
    {"odd_floor", 3, 3, 7, 9, 2, 2, 0, 1, false},
    {"odd_ceil", 3, 2, 7, 9, 2, 2, 0, 1, true},
    {"k3s2p1", 3, 2, 9, 8, 3, 2, 1, 1, false},
    {"k3s2p1_ceil", 1, 3, 8, 7, 3, 2, 1, 1, true},
    {"ceil_drop_last", 1, 2, 3, 5, 2, 2, 1, 1, true},
    {"overlap_s1", 3, 2, 5, 6, 3, 1, 1, 1, false},
    {"dilation2", 1, 2, 9, 8, 3, 1, 1, 2, false},
    {"dilation2_s2_ceil", 3, 2, 10, 9, 2, 2, 1, 2, true},
    {"mnist_pool1", 3, 16, 24, 24, 2, 2, 0, 1, false},
};

class Pool2dTable : public ::testing::TestWithParam<PoolCase> {};

Pool2dOptions case_opts(const PoolCase& c, bool include_pad) {
  return popts(c.k, c.s, c.p, c.ceil, c.d, include_pad);
}

TEST_P(Pool2dTable, MaxGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  std::vector<Tensor> in{distinct_tensor({c.N, c.C, c.H, c.W}, 1)};
  in[0].set_requires_grad(true);
  const Pool2dOptions o = case_opts(c, true);
  test::expect_gradients_match([&](const std::vector<Tensor>& v) { return max_pool2d(v[0], o); },
                               in);
}

TEST_P(Pool2dTable, AvgGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  for (bool include_pad : {true, false}) {
    Pool2dOptions o = case_opts(c, include_pad);
    o.dilation = {1, 1};
    std::vector<Tensor> in{random_tensor({c.N, c.C, c.H, c.W}, 2)};
    in[0].set_requires_grad(true);
    test::expect_gradients_match([&](const std::vector<Tensor>& v) { return avg_pool2d(v[0], o); },
                                 in);
  }
}

TEST_P(Pool2dTable, AdaptiveGradientsMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  const std::array<int64_t, 2> out{std::max<int64_t>(1, c.H / c.k), c.W / 2 + 1};
  std::vector<Tensor> in{random_tensor({c.N, c.C, c.H, c.W}, 3)};
  in[0].set_requires_grad(true);
  test::expect_gradients_match(
      [&](const std::vector<Tensor>& v) { return adaptive_avg_pool2d(v[0], out); }, in);
}

TEST_P(Pool2dTable, FastKernelsMatchReference) {
  const PoolCase& c = GetParam();
  const Tensor x = random_tensor({c.N, c.C, c.H, c.W}, 4);
  const std::pair<const char*, PoolKernels> fast[] = {{"cpu", cpu_backend().pool},
                                                      {"omp", omp_pool_kernels()}};
  const PoolKernels& ref = ref_backend().pool;
  auto expect_same = [&](const Tensor& got, const Tensor& want, const std::string& what) {
    expect_close(got, want, 1e-12, std::string(c.name) + " " + what);
  };
  // max (with dilation) and average with both divisor rules
  for (int variant = 0; variant < 3; ++variant) {
    Pool2dOptions o = case_opts(c, variant != 2);
    if (variant > 0) o.dilation = {1, 1};
    const Pool2dParams p = params(o);
    const Shape ys{c.N, c.C,
                   pool_out_size(c.H, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode),
                   pool_out_size(c.W, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode)};
    const Tensor dy = random_tensor(ys, 5);
    Tensor y_ref = Tensor::empty(ys), dx_ref = Tensor::empty(x.shape()), ws_ref;
    if (variant == 0) {
      ref.max_pool2d_forward(x, y_ref, &ws_ref, p);
      ref.max_pool2d_backward(dy, ws_ref, dx_ref, p);
    } else {
      ref.avg_pool2d_forward(x, y_ref, p);
      ref.avg_pool2d_backward(dy, dx_ref, p);
    }
    const char* vname[] = {"max", "avg_include_pad", "avg_exclude_pad"};
    for (const auto& [name, k] : fast) {
      const std::string tag = std::string(name) + " " + vname[variant];
      Tensor y = Tensor::full(ys, NAN), dx = Tensor::full(x.shape(), NAN), ws;
      if (variant == 0) {
        k.max_pool2d_forward(x, y, &ws, p);
        k.max_pool2d_backward(dy, ws, dx, p);
        Tensor y_inf = Tensor::full(ys, NAN);  // inference path (no workspace)
        k.max_pool2d_forward(x, y_inf, nullptr, p);
        expect_same(y_inf, y_ref, tag + " forward (inference)");
      } else {
        k.avg_pool2d_forward(x, y, p);
        k.avg_pool2d_backward(dy, dx, p);
      }
      expect_same(y, y_ref, tag + " forward");
      expect_same(dx, dx_ref, tag + " backward");
    }
  }
  // adaptive average to a few output sizes, smaller and larger than the input
  for (const std::array<int64_t, 2> out :
       {std::array<int64_t, 2>{1, 1}, {3, 2}, {c.H / 2 + 1, c.W + 2}}) {
    const Shape ys{c.N, c.C, out[0], out[1]};
    const Tensor dy = random_tensor(ys, 6);
    Tensor y_ref = Tensor::empty(ys), dx_ref = Tensor::empty(x.shape());
    ref.adaptive_avg_pool2d_forward(x, y_ref);
    ref.adaptive_avg_pool2d_backward(dy, dx_ref);
    for (const auto& [name, k] : fast) {
      Tensor y = Tensor::full(ys, NAN), dx = Tensor::full(x.shape(), NAN);
      k.adaptive_avg_pool2d_forward(x, y);
      k.adaptive_avg_pool2d_backward(dy, dx);
      expect_same(y, y_ref, std::string(name) + " adaptive forward");
      expect_same(dx, dx_ref, std::string(name) + " adaptive backward");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Pool2dTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MaxPool2d, WorkspaceFromAnotherBackendIsRejected) {
  const Tensor x = random_tensor({1, 2, 6, 6}, 7);
  const Pool2dParams p = params(popts(2, 2));
  Tensor y = Tensor::empty({1, 2, 3, 3}), dx = Tensor::empty(x.shape()), ws;
  cpu_backend().pool.max_pool2d_forward(x, y, &ws, p);
  ASSERT_EQ(ws.dtype(), DType::u8) << "the plain case must run on oneDNN, not the fallback";
  EXPECT_THROW(ref_backend().pool.max_pool2d_backward(Tensor::ones(y.shape()), ws, dx, p), Error);
}

}  // namespace
}  // namespace dplab
