// Op cases on nhwc activations (Layout::nhwc, core/tensor.h), the channels-last layout the CUDA
// backend keeps activations in from one convolution to the next. Each case puts f32 inputs into
// nhwc with to_layout and runs the ops a ResNet is made of on them, so on a device it checks
// cuDNN's channels-last descriptors (the filter copied into KRSC order), the batch-norm kernels'
// nhwc schedule (40 channels: a full tile of 32 and a partial one), the bias kernels, pooling on
// nhwc input and math between an nhwc operand and an NCHW one, against the reference, with
// finite differences on the device. On the CPU (whose kernels take nChw16c, not nhwc) the ops
// convert nhwc operands at every op, so the same case checks the conversions and that gradients
// find their way back through them. The 16-bit path (where a CUDA convolution chooses nhwc by
// itself) is the bf16 cases' (op_cases_bf16.cpp), unchanged: on a device they now run in nhwc.
#include "common/op_case_inputs.h"

namespace dplab::test::cases {

namespace {

Tensor nhwc(const Tensor& x) {
  return to_layout(x, Layout::nhwc);
}

}  // namespace

void add_nhwc_layout(std::vector<OpCase>& cs) {
  cs.push_back({.name = "nhwc_roundtrip",
                .ops = {"to_layout", "mul_scalar"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 5, 3, 4}, 501)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor b = mul_scalar(nhwc(v[0]), 2.f);
                      return Inputs{to_layout(b, Layout::strided), b};
                    }});
  // A convolution with bias on nhwc input: output, dx, dw (copied back from KRSC) and db.
  cs.push_back({.name = "nhwc_conv_bias",
                .ops = {"to_layout", "conv2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 8, 6, 5}, 502), uniform({12, 8, 3, 3}, 503),
                                    uniform({12}, 504)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{conv2d(nhwc(v[0]), v[1], v[2], conv_opts({2, 1}, {1, 1}))};
                    },
                .tol = kGemmTol,
                .grad = kConvGrad});
  // Training batch norm fused with the residual add and ReLU (differentiated) and with ReLU, on
  // 40 channels of 3·4·4 = 48 values each.
  cs.push_back({.name = "nhwc_batchnorm_train_fused",
                .ops = {"to_layout", "batch_norm2d_relu", "batch_norm2d_add_relu"},
                .inputs =
                    [] {
                      return Inputs{uniform({3, 40, 4, 4}, 97, -2.f, 2.f),
                                    uniform({40}, 506, 0.5f, 1.5f), uniform({40}, 507),
                                    uniform({3, 40, 4, 4}, 98)};
                    },
                .fn =
                    [](const Inputs& v) {
                      const Tensor x = nhwc(v[0]);
                      return Inputs{batch_norm2d_add_relu(x, nhwc(v[3]), v[1], v[2], Tensor(),
                                                          Tensor(), true),
                                    batch_norm2d_relu(x, v[1], v[2], Tensor(), Tensor(), true)};
                    },
                .grad = kBatchNormReluGrad});
  // 2·33·33 = 2,178 values per channel: more rows than one of the kernels' row blocks takes
  // (2,048), so the statistics add two blocks' partials.
  cs.push_back({.name = "nhwc_batchnorm_train_large",
                .ops = {"to_layout", "batch_norm2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({2, 40, 33, 33}, 516, -2.f, 2.f),
                                    uniform({40}, 517, 0.5f, 1.5f), uniform({40}, 518)};
                    },
                .fn =
                    [](const Inputs& v) {
                      return Inputs{batch_norm2d(nhwc(v[0]), v[1], v[2], Tensor(), Tensor(), true)};
                    },
                .grad = kLargeRowGrad});
  // Eval-mode batch norm (running statistics) on nhwc.
  cs.push_back({.name = "nhwc_batchnorm_eval",
                .ops = {"to_layout", "batch_norm2d"},
                .inputs =
                    [] {
                      return Inputs{uniform({3, 40, 4, 5}, 509, -2.f, 2.f),
                                    uniform({40}, 510, 0.5f, 1.5f), uniform({40}, 511),
                                    no_grad({40}, 512), no_grad({40}, 513, 0.5f, 1.5f)};
                    },
                .fn =
                    [](const Inputs& v) {
                      Tensor rm = v[3], rv = v[4];
                      return Inputs{batch_norm2d(nhwc(v[0]), v[1], v[2], rm, rv, false)};
                    }});
  // Max pooling of an nhwc activation, and an nhwc operand beside an NCHW one.
  cs.push_back({.name = "nhwc_maxpool_mixed_add",
                .ops = {"to_layout", "max_pool2d", "add"},
                .inputs =
                    [] {
                      return Inputs{distinct({2, 6, 7, 7}, 514), uniform({2, 6, 4, 4}, 515)};
                    },
                .fn =
                    [](const Inputs& v) {
                      const Tensor p = max_pool2d(nhwc(v[0]), pool_opts(3, 2, 1));
                      return Inputs{add(p, v[1]), p};
                    }});
}

}  // namespace dplab::test::cases
