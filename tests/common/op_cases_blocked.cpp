// Op cases on the blocked nChw16c activation layout (core/tensor.h). On the CPU the convolution
// writes its output in that layout whenever oneDNN's primitive does (C_out % 16 == 0 here), and
// batch norm, ReLU, the residual add and pooling compute on it without converting; the same
// case on ref converts at every op (ref reads only NCHW), so parity checks the blocked kernels
// against the specification. Mixed cases put a blocked operand beside an NCHW one, as a
// gradient that arrives in NCHW does. tests/core/test_layout.cpp checks that the CPU really
// takes the blocked paths.
#include "common/op_case_inputs.h"

namespace dplab::test::cases {

namespace {

Tensor blocked(const Tensor& x) {
  return to_layout(x, Layout::nChw16c);
}

// conv (no bias) -> batch norm (train) -> optional ReLU, the unit a ResNet is made of.
Tensor conv_bn(const Tensor& x, const Tensor& w, const Tensor& g, const Tensor& b, bool relu_after,
               const Conv2dOptions& o) {
  Tensor y = batch_norm2d(conv2d(x, w, Tensor(), o), g, b, Tensor(), Tensor(), true);
  return relu_after ? relu(y) : y;
}

}  // namespace

void add_blocked_layout(std::vector<OpCase>& cs) {
  cs.push_back({.name = "blocked_roundtrip",
                .ops = {"to_layout", "mul_scalar"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 32, 3, 5}, 301)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor b = mul_scalar(blocked(v[0]), 2.f);
                      return Inputs{to_layout(b, Layout::strided), b};
                    }});
  // conv -> batch norm, both directions on blocked activations (input, conv output, dx).
  cs.push_back({.name = "blocked_conv_bn",
                .ops = {"to_layout", "conv2d", "batch_norm2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 16, 6, 6}, 302), uniform({32, 16, 3, 3}, 303),
                                    uniform({32}, 304, 0.5f, 1.5f), uniform({32}, 305)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{conv_bn(blocked(v[0]), v[1], v[2], v[3], false,
                                            conv_opts({1, 1}, {1, 1}))};
                    },
                .tol = kGemmTol,
                // Batch norm over 72 values per channel after a 144-term convolution: with
                // eps 1e-3 the f32 rounding of the objective swamps the difference quotient
                // (the NCHW version of this case fails the same way); the function is smooth.
                .grad = kLargeRowGrad});
  // 21x21 = 441 pixels per image: the statistics run over more than one 256-pixel chunk.
  cs.push_back({.name = "blocked_batchnorm_train_large",
                .ops = {"to_layout", "batch_norm2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 32, 21, 21}, 317, -2.f, 2.f),
                                    uniform({32}, 318, 0.5f, 1.5f), uniform({32}, 319)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{
                          batch_norm2d(blocked(v[0]), v[1], v[2], Tensor(), Tensor(), true)};
                    },
                .grad = kLargeRowGrad});
  cs.push_back({.name = "blocked_batchnorm_eval",
                .ops = {"to_layout", "batch_norm2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({3, 16, 4, 5}, 306, -2.f, 2.f),
                                    uniform({16}, 307, 0.5f, 1.5f), uniform({16}, 308),
                                    no_grad({16}, 309), no_grad({16}, 310, 0.5f, 1.5f)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor rm = v[3], rv = v[4];
                      return Inputs{batch_norm2d(blocked(v[0]), v[1], v[2], rm, rv, false)};
                    }});
  cs.push_back(
      {.name = "blocked_relu_add",
       .ops = {"to_layout", "relu", "add"},
       .inputs =
           [] {
             return Inputs{away_from_zero({2, 16, 3, 3}, 311), away_from_zero({2, 16, 3, 3}, 312)};
           },
       .fn = [](const Inputs& v) { return Inputs{relu(add(blocked(v[0]), blocked(v[1])))}; }});
  // A blocked operand beside an NCHW one: read in NCHW.
  cs.push_back({.name = "blocked_mixed_mul",
                .ops = {"to_layout", "mul"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 16, 2, 3}, 313), uniform({2, 16, 2, 3}, 314)};
                    },
                .fn = [](const Inputs& v) { return Inputs{mul(blocked(v[0]), v[1])}; }});
  cs.push_back(
      {.name = "blocked_maxpool",
       .ops = {"to_layout", "max_pool2d"},
       .inputs =
           [] {
             return Inputs{distinct({2, 16, 7, 7}, 315)};
           },
       .fn =
           [](const Inputs& v) { return Inputs{max_pool2d(blocked(v[0]), pool_opts(3, 2, 1))}; }});
  cs.push_back({.name = "blocked_avgpool",
                .ops = {"to_layout", "avg_pool2d", "adaptive_avg_pool2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 32, 6, 6}, 316)};
                    },
                .fn =
                    [](const Inputs& v) {
                      const Tensor p = avg_pool2d(blocked(v[0]), pool_opts(2, 2, 0));
                      return Inputs{p, adaptive_avg_pool2d(p, {1, 1})};
                    }});
  // Ceil-mode windows hanging past the padding with count_include_pad: oneDNN cannot express
  // the divisor, so the parallel reference loops run, on NCHW copies of the blocked operands.
  cs.push_back({.name = "blocked_avgpool_fallback",
                .ops = {"to_layout", "avg_pool2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 16, 6, 6}, 330)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{avg_pool2d(blocked(v[0]), pool_opts(3, 2, 1, 1, true, true))};
                    }});
  // A bottleneck block as ResNet-50 has it, blocked from input to output: three conv/bn units,
  // the residual add, ReLU, then the stem's max pooling and a reduction, backward through all
  // of it (including the gradient that forks at x). Parity only: ReLU kinks and pooling
  // winners make finite differences of the whole block meaningless; the pieces above have
  // them.
  cs.push_back({.name = "blocked_bottleneck",
                .ops = {"to_layout", "conv2d", "batch_norm2d", "relu", "add", "max_pool2d", "sum"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 32, 7, 7}, 320),    uniform({16, 32, 1, 1}, 321),
                                    uniform({16, 16, 3, 3}, 322),   uniform({32, 16, 1, 1}, 323),
                                    uniform({16}, 324, 0.5f, 1.5f), uniform({16}, 325),
                                    uniform({16}, 326, 0.5f, 1.5f), uniform({16}, 327),
                                    uniform({32}, 328, 0.5f, 1.5f), uniform({32}, 329)};
                    },
                .fn =
                    [](const Inputs& v) {
                      const Tensor x = blocked(v[0]);
                      Tensor y = conv_bn(x, v[1], v[4], v[5], true, conv_opts({1, 1}, {0, 0}));
                      y = conv_bn(y, v[2], v[6], v[7], true, conv_opts({1, 1}, {1, 1}));
                      y = conv_bn(y, v[3], v[8], v[9], false, conv_opts({1, 1}, {0, 0}));
                      y = add_relu(y, x);
                      const Tensor p = max_pool2d(y, pool_opts(3, 2, 1));
                      return Inputs{p, sum(p, {0, 2, 3})};
                    },
                .tol = kGemmTol,
                .finite_differences = false});
}

}  // namespace dplab::test::cases
