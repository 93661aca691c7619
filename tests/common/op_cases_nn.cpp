// Op cases: linear, conv2d, pooling, batch norm, softmax and losses, dropout.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/op_case_inputs.h"

namespace dplab::test::cases {

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
  // Fused with the ReLU after it: both modes, plain and blocked (relu's kink: inputs far from 0
  // after normalisation are not guaranteed, so the finite differences use a small step).
  for (bool training : {true, false}) {
    for (bool blocked : {false, true}) {
      const std::string mode = training ? "train" : "eval";
      cs.push_back({.name = "batchnorm_relu_" + mode + (blocked ? "_blocked" : ""),
                    .ops = {"batch_norm2d_relu", "to_layout"},
                    .inputs =
                        [=] {
                          return inputs({3, 16, 4, 4}, 96);
                        },
                    .fn =
                        [=](const Inputs& v) {
                          Tensor rm = v[3], rv = v[4];
                          const Tensor x = blocked ? to_layout(v[0], Layout::nChw16c) : v[0];
                          Tensor y = batch_norm2d_relu(x, v[1], v[2], rm, rv, training, 0.3f);
                          return Inputs{y, rm, rv};
                        },
                    .grad = kBatchNormReluGrad});
    }
  }
  // Fused with a residual add and the ReLU after it (a ResNet block's end), both modes, plain
  // and blocked, gradients to x, the residual, weight and bias.
  for (bool training : {true, false}) {
    for (bool blocked : {false, true}) {
      const std::string mode = training ? "train" : "eval";
      cs.push_back({.name = "batchnorm_add_relu_" + mode + (blocked ? "_blocked" : ""),
                    .ops = {"batch_norm2d_add_relu", "to_layout"},
                    .inputs =
                        [=] {
                          Inputs v = inputs({3, 16, 4, 4}, 97);
                          v.push_back(uniform({3, 16, 4, 4}, 98));
                          return v;
                        },
                    .fn =
                        [=](const Inputs& v) {
                          Tensor rm = v[3], rv = v[4];
                          auto lay = [&](const Tensor& t) {
                            return blocked ? to_layout(t, Layout::nChw16c) : t;
                          };
                          Tensor y = batch_norm2d_add_relu(lay(v[0]), lay(v[5]), v[1], v[2], rm, rv,
                                                           training, 0.3f);
                          return Inputs{y, rm, rv};
                        },
                    .grad = kBatchNormReluGrad});
    }
  }
  // An empty batch in eval mode (training refuses one): y is empty, and the parameters'
  // gradients are empty sums, zero.
  cs.push_back({.name = "batchnorm_eval_empty_batch",
                .ops = {"batch_norm2d"},
                .inputs =
                    [=] {
                      return inputs({0, 3, 5, 5}, 99);
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor rm = v[3], rv = v[4];
                      Tensor y = batch_norm2d(v[0], v[1], v[2], rm, rv, false);
                      return Inputs{y, rm, rv};
                    },
                .grad = kBatchNormGrad});
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

}  // namespace dplab::test::cases
