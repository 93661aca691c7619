#include "dplab/core/ops/conv.h"

#include "dplab/core/autocast.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/activation_layout.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/shape.h"

namespace dplab {
namespace {

Conv2dParams to_params(const Conv2dOptions& o) {
  Conv2dParams p;
  p.stride_h = o.stride[0], p.stride_w = o.stride[1];
  p.pad_h = o.padding[0], p.pad_w = o.padding[1];
  p.dilation_h = o.dilation[0], p.dilation_w = o.dilation[1];
  p.groups = o.groups;
  return p;
}

// Saves the (contiguous) input and weight; computes only the gradients whose inputs need one.
// Grad slots: 0 input, 1 weight, 2 bias. `dt` is the activations' dtype (x, y, dy, dx): f32, or
// bf16/f16 under autocast; dw has the weight's own dtype (f32 master weights on a backend with
// bf16 activations, the 16-bit copy under CUDA autocast).
class Conv2dBackward : public Node {
 public:
  // x / w may be undefined when the other gradient is not wanted.
  // x_layout: dx is made in the layout x came in (the op before reads its gradient so).
  Conv2dBackward(Tensor x, Tensor w, Shape x_shape, Shape w_shape, bool has_bias,
                 const Conv2dParams& p, DType dt, DType w_dt, Layout x_layout)
      : x_(std::move(x)),
        w_(std::move(w)),
        x_shape_(std::move(x_shape)),
        w_shape_(std::move(w_shape)),
        has_bias_(has_bias),
        p_(p),
        dt_(dt),
        w_dt_(w_dt),
        x_layout_(x_layout) {}

  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
    const Backend& be = backend_for(grads[0].device());
    const Tensor& g = grads[0];
    const Tensor dy =
        activation_operand(be, g.dtype() == dt_ ? g : g.contiguous_if_blocked().to(dt_));
    const bool want_x = next_edges[0].fn != nullptr;
    const bool want_w = next_edges[1].fn != nullptr;
    const bool want_b = has_bias_ && next_edges[2].fn != nullptr;
    Tensor dx, dw, db;
    if (want_x) {
      dx = empty_in_layout(x_shape_, x_layout_, dy.device(), dt_);
      be.conv.conv2d_backward_data(dy, w_, dx, p_);
    }
    if (want_w || want_b) {
      // One pass computes both; a bias-only request still needs somewhere to put dw.
      dw = Tensor::empty(w_shape_, w_dt_, dy.device());
      if (want_b) db = Tensor::empty({w_shape_[0]}, DType::f32, dy.device());
      be.conv.conv2d_backward_weight(x_, dy, dw, db, p_);
      if (!want_w) dw = Tensor();
    }
    return {dx, dw, db};
  }
  std::string name() const override { return "Conv2dBackward"; }
  void release() override {
    x_ = Tensor();
    w_ = Tensor();
  }

 private:
  Tensor x_, w_;
  Shape x_shape_, w_shape_;
  bool has_bias_;
  Conv2dParams p_;
  DType dt_, w_dt_;
  Layout x_layout_;
};

void check_input(const Tensor& t, const char* what, int dims, DType dt = DType::f32) {
  DPLAB_CHECK(t.defined(), "conv2d: {} is undefined", what);
  DPLAB_CHECK(t.dtype() == dt, "conv2d: {} must be {}, got {}", what, dtype_name(dt), t.str());
  DPLAB_CHECK(t.dim() == dims, "conv2d: {} must be {}-D, got {}", what, dims, t.str());
}

void check_bias(const Tensor& bias, const Tensor& x, int64_t out_channels) {
  check_input(bias, "bias [out]", 1);
  check_same_device(x, bias, "conv2d input and bias");
  DPLAB_CHECK(bias.size(0) == out_channels,
              "conv2d: bias has {} elements, weight has {} out_channels", bias.size(0),
              out_channels);
}

// The convolution proper on x of dtype `dt` (f32, or 16-bit under autocast) and weight of `dt`
// or (bf16 activations beside f32 master weights, on a backend with bf16_activations) f32: y
// and dx are of dtype `dt`, dw of the weight's.
Tensor conv2d_impl(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& opt, DType dt) {
  check_input(x, "input [N, C, H, W]", 4, dt);
  const bool master_weights =
      dt == DType::bf16 && x.defined() && backend_for(x.device()).bf16_activations;
  check_input(weight, "weight [out, in/groups, kh, kw]", 4,
              master_weights && weight.defined() && weight.dtype() == DType::f32 ? DType::f32 : dt);
  check_same_device(x, weight, "conv2d input and weight");
  const int64_t G = opt.groups;
  DPLAB_CHECK(G >= 1, "conv2d: groups must be >= 1, got {}", G);
  for (int i = 0; i < 2; ++i) {
    DPLAB_CHECK(opt.stride[i] >= 1 && opt.dilation[i] >= 1 && opt.padding[i] >= 0,
                "conv2d: need stride >= 1, dilation >= 1, padding >= 0; got stride ({}, {}) "
                "dilation ({}, {}) padding ({}, {})",
                opt.stride[0], opt.stride[1], opt.dilation[0], opt.dilation[1], opt.padding[0],
                opt.padding[1]);
  }
  const int64_t C = x.size(1), O = weight.size(0);
  DPLAB_CHECK(C == weight.size(1) * G,
              "conv2d: input channels {} != weight in_channels*groups {} (weight {}, groups {})", C,
              weight.size(1) * G, shape_str(weight.shape()), G);
  DPLAB_CHECK(O % G == 0, "conv2d: out_channels {} is not divisible by groups {}", O, G);
  DPLAB_CHECK(x.numel() > 0 && weight.numel() > 0, "conv2d: empty input {} or weight {}", x.str(),
              weight.str());
  if (bias.defined()) check_bias(bias, x, O);
  const Conv2dParams p = to_params(opt);
  const int64_t OH = conv_out_size(x.size(2), weight.size(2), p.stride_h, p.pad_h, p.dilation_h);
  const int64_t OW = conv_out_size(x.size(3), weight.size(3), p.stride_w, p.pad_w, p.dilation_w);
  DPLAB_CHECK(OH >= 1 && OW >= 1,
              "conv2d: input {}x{} (padding {}, {}) is smaller than the dilated kernel {}x{} "
              "(dilation {}, {})",
              x.size(2), x.size(3), p.pad_h, p.pad_w, weight.size(2), weight.size(3), p.dilation_h,
              p.dilation_w);

  const Backend& be = backend_for(x.device());
  const Tensor xc = activation_operand(be, x), wc = weight.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const Layout yl = be.conv.conv2d_output_layout
                        ? be.conv.conv2d_output_layout(xc, wc, p, bc.defined())
                        : Layout::strided;
  Tensor y = Tensor::empty({x.size(0), O, OH, OW}, yl, dt, x.device());
  be.conv.conv2d_forward(xc, wc, bc, y, p);
  if (any_requires_grad({&x, &weight, &bias})) {
    // dx needs only the weight, dw and db only the input: keep just what will be used.
    const bool want_wb = weight.requires_grad() || (bias.defined() && bias.requires_grad());
    auto node = std::make_shared<Conv2dBackward>(
        want_wb ? xc : Tensor(), x.requires_grad() ? wc : Tensor(), x.shape(), weight.shape(),
        bias.defined(), p, dt, weight.dtype(), xc.layout());
    set_history(node, {&x, &weight, bias.defined() ? &bias : nullptr}, {&y});
  }
  return y;
}

// f16 autocast on a CUDA device: the convolution really runs on 16-bit operands (tensor cores).
// cast(x), cast(w) -> 16-bit conv -> cast(y) to f32 -> + bias in f32. cuDNN's legacy API takes
// one dtype for x, w and y, so y is 16-bit (f32-accumulated, then rounded once) and is cast to
// f32 at once: the layers after it (batch norm, activations, the loss) and the bias stay f32.
// Backward runs through the same nodes: the cast of y hands the conv a 16-bit dy, the conv
// computes 16-bit dx/dw, and the casts of x and w convert them to f32 for the master weights.
Tensor conv2d_autocast_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Conv2dOptions& opt) {
  check_input(x, "input [N, C, H, W]", 4);
  check_input(weight, "weight [out, in/groups, kh, kw]", 4);
  if (bias.defined()) check_bias(bias, x, weight.size(0));
  const DType d = autocast_dtype();
  Tensor y = cast(conv2d_impl(cast(x, d), cast(weight, d), Tensor(), opt, d), DType::f32);
  if (bias.defined()) y = add(y, reshape(bias, {1, bias.size(0), 1, 1}));
  return y;
}

// Autocast to bf16 on a backend that keeps activations in bf16 (AVX-512 CPUs, CUDA): x is cast to
// bf16 if it is not already (only a network's first convolution sees f32), the kernel reads the f32
// master weights and bias itself, y is bf16 and so is every activation after it until an op
// that needs f32 (the pooling before the classifier, the loss). Backward: dx bf16, dw f32.
Tensor conv2d_autocast_bf16(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Conv2dOptions& opt) {
  check_input(x, "input [N, C, H, W]", 4, x.defined() ? x.dtype() : DType::f32);
  return conv2d_impl(cast(x, DType::bf16), weight, bias, opt, DType::bf16);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& opt) {
  if (autocast_enabled()) {
    // Mixed precision (core/autocast.h).
    if (x.defined() && autocast_dtype() == DType::bf16 &&
        backend_for(x.device()).bf16_activations && is_floating(x.dtype()))
      return conv2d_autocast_bf16(x, weight, bias, opt);
    if (x.defined() && x.device().is_cuda()) return conv2d_autocast_cuda(x, weight, bias, opt);
    // Otherwise (f16 on the CPU): rounded operands, f32 math.
    const Tensor xa = autocast_operand(x), wa = autocast_operand(weight);
    AutocastGuard off(DType::f32);
    return conv2d(xa, wa, bias, opt);
  }
  return conv2d_impl(x, weight, bias, opt, DType::f32);
}

}  // namespace dplab
