// Op cases on bf16 activations (autocast, core/autocast.h): on a backend with
// Backend::bf16_activations a convolution under autocast writes bf16, and batch norm (plain,
// fused with ReLU, fused with the residual add and ReLU), the element-wise ops and pooling keep
// it bf16, NCHW or blocked, until the classifier widens it. The reference computes each op in
// f32 on the bf16 values and rounds its output once, which is what the fast kernels promise;
// they differ only in f32 summation order before each rounding. Cases through autocast need a
// backend that keeps bf16 activations (AVX-512 CPUs, CUDA); cases that make bf16 tensors
// themselves need only kernels that take them (every CPU, CUDA). A backend without them skips,
// saying so.
//
// Tolerance (normalised error): where the two f32 results straddle a bf16 rounding boundary
// the outputs differ by one bf16 step, 2^-8 relative; if every element did, the normalised
// error would be 2^-16 = 1.5e-5 per rounding, and a case chains up to about six of them (conv,
// batch norm, ...), hence 1e-4. A wrong kernel (a missed ReLU, a wrong channel) is off by
// 1e-2 or more. CUDA also rounds a convolution's weight gradient to bf16 once (cuDNN writes it
// in the operands' dtype): 2^-9 relative at most, an nmse below 2^-18, well inside. No finite
// differences: the output is piecewise constant in the inputs.
//
// Gradients are compared where they are continuous in the inputs. A ReLU whose input lies
// within one bf16 step of 0, or a max-pooling window whose two largest values do, flips between
// the two sides and moves that element's gradient by all of dy (measured: 4e-3 normalised on a
// bottleneck's gradients, against 6e-6 for the convolution alone and 0 for the fused batch
// norms alone); and training-mode batch norm's backward subtracts the batch means of dy and
// dy·x̂, which amplifies one-step differences of its input where they explain most of dy. So
// the bottleneck compares its forward outputs only; a chain without kinks (convolutions,
// eval-mode batch norm, the residual add, pooling, the classifier) compares gradients; and the
// fused batch norms are checked on their own, where both sides see identical inputs.
#include "common/op_case_inputs.h"
#include "dplab/core/autocast.h"

namespace dplab::test::cases {

namespace {

constexpr double kBf16Tol = 1e-4;

Conv2dOptions conv(int64_t pad) {
  return conv_opts({1, 1}, {pad, pad});
}

}  // namespace

void add_bf16_activations(std::vector<OpCase>& cs) {
  // ResNet-50's bottleneck on blocked bf16 activations, with the stem's max pooling and the
  // classifier after it: forward outputs.
  cs.push_back(
      {.name = "bf16_bottleneck",
       .ops = {"conv2d", "batch_norm2d_relu", "batch_norm2d_add_relu", "max_pool2d",
               "adaptive_avg_pool2d", "linear", "cast"},
       .inputs =
           [] {
             return Inputs{no_grad({2, 32, 7, 7}, 400),    no_grad({16, 32, 1, 1}, 401),
                           no_grad({16, 16, 3, 3}, 402),   no_grad({32, 16, 1, 1}, 403),
                           no_grad({16}, 404, 0.5f, 1.5f), no_grad({16}, 405),
                           no_grad({16}, 406, 0.5f, 1.5f), no_grad({16}, 407),
                           no_grad({32}, 408, 0.5f, 1.5f), no_grad({32}, 409),
                           no_grad({10, 32}, 410),         no_grad({10}, 411),
                           no_grad({32, 32, 1, 1}, 412),   no_grad({16}, 413),
                           no_grad({16}, 414, 1.f, 4.f),   no_grad({32}, 415),
                           no_grad({32}, 416, 1.f, 4.f)};
           },
       .fn =
           [](const Inputs& v) {
             AutocastGuard bf16(DType::bf16);
             const Tensor x = conv2d(v[0], v[12], Tensor(), conv(0));    // f32 in, bf16 out
             Tensor m16 = v[13], s16 = v[14], m32 = v[15], s32 = v[16];  // running statistics
             Tensor y =
                 batch_norm2d_relu(conv2d(x, v[1], Tensor(), conv(0)), v[4], v[5], m16, s16, false);
             y = batch_norm2d_relu(conv2d(y, v[2], Tensor(), conv(1)), v[6], v[7], m16, s16, false);
             y = batch_norm2d_add_relu(conv2d(y, v[3], Tensor(), conv(0)), x, v[8], v[9], m32, s32,
                                       false);
             const Tensor p = max_pool2d(y, pool_opts(3, 2, 1));
             const Tensor logits = linear(flatten(adaptive_avg_pool2d(p, {1, 1}), 1), v[10], v[11]);
             return Inputs{logits, y, p};
           },
       .tol = kBf16Tol,
       .finite_differences = false,
       .bf16_activations = true});
  // Gradients through a chain without kinks: f32 input, convolutions with and without bias
  // (NCHW and blocked), eval-mode batch norm, the residual add, pooling and the classifier.
  cs.push_back(
      {.name = "bf16_conv_chain",
       .ops = {"conv2d", "batch_norm2d", "add", "adaptive_avg_pool2d", "linear"},
       .inputs =
           [] {
             return Inputs{uniform({2, 8, 6, 6}, 450),
                           uniform({16, 8, 3, 3}, 451),
                           uniform({16}, 452),
                           uniform({16, 16, 1, 1}, 453),
                           uniform({16}, 454, 0.5f, 1.5f),
                           uniform({16}, 455),
                           no_grad({16}, 456),
                           no_grad({16}, 457, 1.f, 4.f),
                           uniform({5, 16}, 458)};
           },
       .fn =
           [](const Inputs& v) {
             AutocastGuard bf16(DType::bf16);
             Tensor rm = v[6], rv = v[7];
             const Tensor a = conv2d(v[0], v[1], v[2], conv(1));
             const Tensor b =
                 batch_norm2d(conv2d(a, v[3], Tensor(), conv(0)), v[4], v[5], rm, rv, false);
             const Tensor c = add(b, a);
             return Inputs{linear(flatten(adaptive_avg_pool2d(c, {1, 1}), 1), v[8], Tensor()), c};
           },
       .tol = kBf16Tol,
       .finite_differences = false,
       .bf16_activations = true});
  // Channel counts that do not block (NCHW bf16), a convolution bias and average pooling:
  // forward outputs.
  cs.push_back(
      {.name = "bf16_nchw_units",
       .ops = {"conv2d", "batch_norm2d", "batch_norm2d_relu", "batch_norm2d_add_relu",
               "avg_pool2d"},
       .inputs =
           [] {
             return Inputs{
                 no_grad({2, 3, 8, 8}, 420), no_grad({6, 3, 3, 3}, 421),    no_grad({6}, 422),
                 no_grad({6, 6, 3, 3}, 423), no_grad({6}, 424, 0.5f, 1.5f), no_grad({6}, 425),
                 no_grad({6}, 426),          no_grad({6}, 427, 1.f, 4.f)};
           },
       .fn =
           [](const Inputs& v) {
             AutocastGuard bf16(DType::bf16);
             Tensor rm = v[6], rv = v[7];
             const Tensor a = conv2d(v[0], v[1], v[2], conv(1));
             Tensor y = batch_norm2d_relu(a, v[4], v[5], rm, rv, false);
             y = batch_norm2d_add_relu(conv2d(y, v[3], Tensor(), conv(1)), a, v[4], v[5], rm, rv,
                                       false);
             const Tensor z = batch_norm2d(y, v[4], v[5], rm, rv, false);
             return Inputs{avg_pool2d(z, pool_opts(2, 2, 0)), a};
           },
       .tol = kBf16Tol,
       .finite_differences = false,
       .bf16_activations = true});
  // Training-mode batch norm on bf16 input, plain, with ReLU and with the residual add, NCHW and
  // blocked; the running statistics are outputs too.
  for (bool blocked : {false, true}) {
    cs.push_back(
        {.name = std::string("bf16_batchnorm_train") + (blocked ? "_blocked" : ""),
         .ops = {"cast", "to_layout", "batch_norm2d", "batch_norm2d_relu", "batch_norm2d_add_relu"},
         .inputs =
             [] {
               return Inputs{uniform({2, 32, 5, 7}, 440, -2.f, 2.f),
                             uniform({32}, 441, 0.5f, 1.5f),
                             uniform({32}, 442),
                             uniform({2, 32, 5, 7}, 443),
                             no_grad({32}, 444),
                             no_grad({32}, 445, 0.5f, 1.5f)};
             },
         .fn =
             [=](const Inputs& v) {
               auto act = [&](const Tensor& t) {
                 const Tensor b = cast(t, DType::bf16);
                 return blocked ? to_layout(b, Layout::nChw16c) : b;
               };
               Tensor rm = v[4], rv = v[5];
               const Tensor x = act(v[0]), r = act(v[3]);
               const Tensor y = batch_norm2d(x, v[1], v[2], rm, rv, true, 0.3f);
               const Tensor z = batch_norm2d_relu(x, v[1], v[2], Tensor(), Tensor(), true);
               const Tensor u = batch_norm2d_add_relu(x, r, v[1], v[2], Tensor(), Tensor(), true);
               return Inputs{add(add(y, z), u), rm, rv};
             },
         .tol = kBf16Tol,
         .finite_differences = false,
         .bf16_kernels = true});
  }
  // Batch norm on bf16 with more values per channel than a CUDA block has threads (256), and a
  // plane (13 x 11) that does not divide it, so each thread's walk over the channel spans
  // images; and with more than a block's share (16,384 values: 96 x 100 x 2 = 19,200), so two
  // blocks share each channel (core/cuda/bn_channel.h). Training (plain, ReLU, add-ReLU) and eval
  // (ReLU, add-ReLU), outputs and gradients.
  for (const auto& [suffix, shape] :
       {std::pair<std::string, Shape>{"many_per_channel", {4, 8, 13, 11}},
        std::pair<std::string, Shape>{"two_blocks_per_channel", {2, 4, 96, 100}}}) {
    const int64_t C = shape[1];
    cs.push_back({.name = "bf16_batchnorm_" + suffix,
                  .ops = {"cast", "batch_norm2d", "batch_norm2d_relu", "batch_norm2d_add_relu"},
                  .inputs =
                      [shape, C] {
                        return Inputs{uniform(shape, 460, -2.f, 2.f),
                                      uniform({C}, 461, 0.5f, 1.5f),
                                      uniform({C}, 462),
                                      uniform(shape, 463),
                                      no_grad({C}, 464),
                                      no_grad({C}, 465, 0.5f, 1.5f)};
                      },
                  .fn =
                      [](const Inputs& v) {
                        Tensor rm = v[4], rv = v[5];
                        const Tensor x = cast(v[0], DType::bf16), r = cast(v[3], DType::bf16);
                        const Tensor y = batch_norm2d(x, v[1], v[2], rm, rv, true, 0.3f);
                        const Tensor z = batch_norm2d_relu(x, v[1], v[2], Tensor(), Tensor(), true);
                        const Tensor u =
                            batch_norm2d_add_relu(x, r, v[1], v[2], Tensor(), Tensor(), true);
                        Tensor em = v[4], ev = v[5];
                        const Tensor e = batch_norm2d_add_relu(x, r, v[1], v[2], em, ev, false);
                        const Tensor f = batch_norm2d_relu(x, v[1], v[2], em, ev, false);
                        return Inputs{add(add(y, z), add(u, add(e, f))), rm, rv};
                      },
                  .tol = kBf16Tol,
                  .finite_differences = false,
                  .bf16_kernels = true});
  }
  // Element-wise ops on bf16 operands, NCHW and blocked: bf16 in, bf16 out (mixed: f32).
  cs.push_back(
      {.name = "bf16_elementwise",
       .ops = {"cast", "to_layout", "add", "add_relu", "mul", "relu"},
       .inputs =
           [] {
             return Inputs{away_from_zero({2, 16, 3, 5}, 430), away_from_zero({2, 16, 3, 5}, 431)};
           },
       .fn =
           [](const Inputs& v) {
             const Tensor a = cast(v[0], DType::bf16), b = cast(v[1], DType::bf16);
             const Tensor ab = to_layout(a, Layout::nChw16c);
             const Tensor bb = to_layout(b, Layout::nChw16c);
             const Tensor blocked = add_relu(mul(ab, bb), relu(ab));
             return Inputs{add(relu(a), mul(a, b)), blocked, mul(a, v[1])};
           },
       .tol = kBf16Tol,
       .finite_differences = false,
       .bf16_kernels = true});
}

}  // namespace dplab::test::cases
