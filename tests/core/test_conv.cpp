// conv2d: hand-computed values, finite-difference gradients through the op, and the fast
// kernels (oneDNN, and the OpenMP fallback loops) against the reference on a table of shapes.
#include <gtest/gtest.h>
#include <omp.h>

#include <thread>

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

Conv2dOptions opts(int64_t stride, int64_t pad, int64_t dil = 1, int64_t groups = 1) {
  Conv2dOptions o;
  o.stride = {stride, stride};
  o.padding = {pad, pad};
  o.dilation = {dil, dil};
  o.groups = groups;
  return o;
}

Conv2dParams params(const Conv2dOptions& o) {
  Conv2dParams p;
  p.stride_h = o.stride[0], p.stride_w = o.stride[1];
  p.pad_h = o.padding[0], p.pad_w = o.padding[1];
  p.dilation_h = o.dilation[0], p.dilation_w = o.dilation[1];
  p.groups = o.groups;
  return p;
}

// Runs one backend's forward kernel on a preallocated output shaped like `like`.
Tensor kernel_forward(const ConvKernels& k, const Tensor& x, const Tensor& w, const Tensor& b,
                      const Conv2dOptions& o) {
  const Conv2dParams p = params(o);
  Tensor y = Tensor::empty(
      {x.size(0), w.size(0), conv_out_size(x.size(2), w.size(2), p.stride_h, p.pad_h, p.dilation_h),
       conv_out_size(x.size(3), w.size(3), p.stride_w, p.pad_w, p.dilation_w)});
  k.conv2d_forward(x, w, b, y, p);
  return y;
}

// Hand-computed forward values, checked through the op (cpu backend) and the ref kernels.
struct HandCase {
  const char* name;
  Tensor x, w, b;
  Conv2dOptions o;
  std::vector<float> expected;
};

std::vector<HandCase> hand_cases() {
  return {
      // y[i,j] = sum_{a,b} x[i+a, j+b] w[a,b] with x = 1..9 (3x3), w = 1..4 (2x2), bias 1.
      {"plain_bias",
       iota({1, 1, 3, 3}),
       iota({1, 1, 2, 2}),
       Tensor::from_vector({1}, {1}),
       opts(1, 0),
       {38, 48, 68, 78}},
      // padding 1, stride 2: windows start at -1 and 1 in each dim.
      {"pad1_stride2",
       iota({1, 1, 3, 3}),
       iota({1, 1, 2, 2}),
       Tensor(),
       opts(2, 1),
       {4, 18, 36, 77}},
      // dilation 2: the four corners of the 3x3 input.
      {"dilation2", iota({1, 1, 3, 3}), Tensor::ones({1, 1, 2, 2}), Tensor(), opts(1, 0, 2), {20}},
      // groups 2 with 1x1 kernels: channel 0 doubled, channel 1 negated.
      {"groups2",
       iota({1, 2, 2, 2}),
       Tensor::from_vector({2, -1}, {2, 1, 1, 1}),
       Tensor(),
       opts(1, 0, 1, 2),
       {2, 4, 6, 8, -5, -6, -7, -8}},
      // two output channels, batch 2: each output channel sums its own kernel tap.
      {"batch2_out2",
       iota({2, 1, 2, 2}),
       Tensor::from_vector({1, 0, 0, 0, 0, 0, 0, 1}, {2, 1, 2, 2}),
       Tensor::from_vector({0, 10}, {2}),
       opts(1, 0),
       {1, 14, 5, 18}},
  };
}

TEST(Conv2d, HandComputedValues) {
  for (const HandCase& c : hand_cases()) {
    EXPECT_EQ(conv2d(c.x, c.w, c.b, c.o).to_vector(), c.expected) << c.name << " (op)";
    EXPECT_EQ(kernel_forward(ref_conv_kernels(), c.x, c.w, c.b, c.o).to_vector(), c.expected)
        << c.name << " (ref)";
  }
}

TEST(Conv2d, OutputShapeFollowsPyTorch) {
  Tensor x = Tensor::zeros({2, 3, 28, 28});
  EXPECT_EQ(conv2d(x, Tensor::zeros({16, 3, 5, 5}), Tensor(), opts(1, 0)).shape(),
            (Shape{2, 16, 24, 24}));
  EXPECT_EQ(conv2d(x, Tensor::zeros({6, 1, 3, 3}), Tensor(), opts(2, 1, 1, 3)).shape(),
            (Shape{2, 6, 14, 14}));
  EXPECT_EQ(conv2d(x, Tensor::zeros({4, 3, 3, 3}), Tensor(), opts(3, 2, 2)).shape(),
            (Shape{2, 4, 10, 10}));
}

TEST(Conv2d, RejectsBadInputsWithClearErrors) {
  Tensor x = Tensor::zeros({1, 3, 8, 8});
  try {
    conv2d(x, Tensor::zeros({2, 2, 3, 3}), Tensor(), opts(1, 0, 1, 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input channels 3 != weight in_channels*groups 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(conv2d(x, Tensor::zeros({3, 1, 3, 3}), Tensor(), opts(1, 0, 1, 2)), Error);
  EXPECT_THROW(conv2d(x, Tensor::zeros({2, 3, 3, 3}), Tensor::zeros({3}), opts(1, 0)), Error);
  EXPECT_THROW(conv2d(x, Tensor::zeros({2, 3, 9, 9}), Tensor(), opts(1, 0)), Error);
  EXPECT_THROW(conv2d(x, Tensor::zeros({2, 3, 3, 3}), Tensor(), opts(0, 0)), Error);
  EXPECT_THROW(conv2d(x.to(DType::bf16), Tensor::zeros({2, 3, 3, 3}), Tensor(), opts(1, 0)), Error);
  EXPECT_THROW(conv2d(Tensor::zeros({3, 8, 8}), Tensor::zeros({2, 3, 3, 3}), Tensor(), opts(1, 0)),
               Error);
}

TEST(Conv2d, NonContiguousInputMatchesContiguous) {
  Tensor x = random_tensor({2, 3, 6, 7}, 1);
  Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);  // same values, other strides
  ASSERT_FALSE(xt.is_contiguous());
  Tensor w = random_tensor({4, 3, 3, 3}, 2);
  expect_close(conv2d(xt, w, Tensor(), opts(1, 1)), conv2d(x, w, Tensor(), opts(1, 1)), 0,
               "transposed-view input");
}

// ---- the table: shapes for gradient checks and fast-vs-ref parity --------------------------

struct ConvCase {
  const char* name;
  int64_t N, C, H, W, O, KH, KW;
  int64_t stride, pad, dil, groups;
  bool bias;
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.name;
}

const ConvCase kCases[] = {
    {"basic", 1, 1, 5, 5, 1, 3, 3, 1, 0, 1, 1, true},
    {"odd_sizes_pad", 3, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, true},
    {"stride2_pad1", 3, 4, 9, 8, 6, 3, 3, 2, 1, 1, 1, true},
    {"stride2_leftover", 1, 2, 8, 8, 3, 3, 3, 2, 0, 1, 1, false},
    {"groups2", 3, 4, 6, 7, 6, 3, 3, 1, 1, 1, 2, true},
    {"depthwise", 1, 4, 7, 7, 4, 3, 3, 2, 1, 1, 4, false},
    {"dilation2", 1, 2, 9, 9, 3, 3, 3, 1, 2, 2, 1, true},
    {"rect_kernel", 3, 2, 6, 8, 4, 2, 3, 1, 0, 1, 1, false},
    {"pointwise", 3, 5, 4, 4, 7, 1, 1, 1, 0, 1, 1, true},
    {"mnist_conv1", 1, 1, 28, 28, 16, 5, 5, 1, 0, 1, 1, true},
    {"mnist_conv2", 3, 16, 12, 12, 32, 5, 5, 1, 0, 1, 1, true},
    {"groups_dil_stride", 3, 6, 11, 10, 9, 3, 2, 2, 1, 2, 3, true},
    {"pad2_k5", 1, 3, 7, 6, 2, 5, 5, 1, 2, 1, 1, false},
};

class Conv2dTable : public ::testing::TestWithParam<ConvCase> {};

std::string case_name(const ::testing::TestParamInfo<ConvCase>& info) {
  return info.param.name;
}

Conv2dOptions case_opts(const ConvCase& c) {
  return opts(c.stride, c.pad, c.dil, c.groups);
}

TEST_P(Conv2dTable, GradientsMatchFiniteDifferences) {
  const ConvCase& c = GetParam();
  std::vector<Tensor> in{random_tensor({c.N, c.C, c.H, c.W}, 11),
                         random_tensor({c.O, c.C / c.groups, c.KH, c.KW}, 12),
                         c.bias ? random_tensor({c.O}, 13) : Tensor()};
  for (auto& t : in)
    if (t.defined()) t.set_requires_grad(true);
  const Conv2dOptions o = case_opts(c);
  test::GradCheckOptions gc;
  if (c.N * c.C * c.H * c.W > 2000) gc.max_elements = 16;  // keeps the big shapes fast
  test::expect_gradients_match(
      [&](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], o); }, in, gc);
}

TEST_P(Conv2dTable, FastKernelsMatchReference) {
  const ConvCase& c = GetParam();
  const Conv2dOptions o = case_opts(c);
  const Conv2dParams p = params(o);
  const Tensor x = random_tensor({c.N, c.C, c.H, c.W}, 21);
  const Tensor w = random_tensor({c.O, c.C / c.groups, c.KH, c.KW}, 22);
  const Tensor b = c.bias ? random_tensor({c.O}, 23) : Tensor();
  const Tensor y_ref = kernel_forward(ref_conv_kernels(), x, w, b, o);
  const Tensor dy = random_tensor(y_ref.shape(), 24);
  Tensor dx_ref = Tensor::empty(x.shape()), dw_ref = Tensor::empty(w.shape());
  Tensor db_ref = c.bias ? Tensor::empty({c.O}) : Tensor();
  ref_conv_kernels().conv2d_backward_data(dy, w, dx_ref, p);
  ref_conv_kernels().conv2d_backward_weight(x, dy, dw_ref, db_ref, p);

  const std::pair<const char*, ConvKernels> fast[] = {{"cpu", cpu_backend().conv},
                                                      {"omp", omp_conv_kernels()}};
  for (const auto& [name, k] : fast) {
    const std::string tag = std::string(name) + " " + c.name;
    // Outputs start as NaN: a kernel that skips an element is caught.
    Tensor y = Tensor::full(y_ref.shape(), NAN);
    k.conv2d_forward(x, w, b, y, p);
    expect_close(y, y_ref, 1e-10, tag + " forward");
    Tensor dx = Tensor::full(x.shape(), NAN), dw = Tensor::full(w.shape(), NAN);
    Tensor db = c.bias ? Tensor::full({c.O}, NAN) : Tensor();
    k.conv2d_backward_data(dy, w, dx, p);
    expect_close(dx, dx_ref, 1e-10, tag + " backward data");
    k.conv2d_backward_weight(x, dy, dw, db, p);
    expect_close(dw, dw_ref, 1e-10, tag + " backward weight");
    if (c.bias) expect_close(db, db_ref, 1e-10, tag + " backward bias");
    // Weight gradient without bias gradient gives the same weight gradient.
    Tensor dw2 = Tensor::full(w.shape(), NAN), none;
    k.conv2d_backward_weight(x, dy, dw2, none, p);
    expect_close(dw2, dw_ref, 1e-10, tag + " backward weight (no bias)");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Conv2dTable, ::testing::ValuesIn(kCases), case_name);

TEST(Conv2d, OnlyRequestedGradientsAreComputed) {
  Tensor x = random_tensor({1, 2, 5, 5}, 31);  // no grad: like a network input
  Tensor w = random_tensor({3, 2, 3, 3}, 32).set_requires_grad(true);
  Tensor b = random_tensor({3}, 33);  // frozen bias
  Tensor y = conv2d(x, w, b, opts(1, 1));
  backward(y, Tensor::ones(y.shape()));
  ASSERT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  // dL/dw with L = sum(y): sum over positions of the input values each tap touches.
  Tensor dw = Tensor::empty(w.shape()), none;
  ref_conv_kernels().conv2d_backward_weight(x, Tensor::ones(y.shape()), dw, none,
                                            params(opts(1, 1)));
  expect_close(w.grad(), dw, 1e-10, "weight grad");
}

// Primitives are cached per thread count and run with per-thread scratchpads: one and two
// OpenMP threads, and two callers at once, all give the reference result.
TEST(Conv2d, ThreadCountsAndConcurrentCallersAgree) {
  const Conv2dOptions o = opts(1, 1);
  const Tensor x = random_tensor({3, 8, 10, 10}, 41), w = random_tensor({8, 8, 3, 3}, 42);
  const Tensor want = kernel_forward(ref_conv_kernels(), x, w, Tensor(), o);
  const int saved = omp_get_max_threads();
  for (int t : {1, 2}) {
    omp_set_num_threads(t);
    expect_close(conv2d(x, w, Tensor(), o), want, 1e-10, "threads " + std::to_string(t));
  }
  omp_set_num_threads(saved);
  Tensor got[2];
  std::thread a([&] { got[0] = conv2d(x, w, Tensor(), o); });
  std::thread b([&] { got[1] = conv2d(x, w, Tensor(), o); });
  a.join();
  b.join();
  expect_close(got[0], want, 1e-10, "concurrent caller 0");
  expect_close(got[1], want, 1e-10, "concurrent caller 1");
}

}  // namespace
}  // namespace dplab
