#include "dplab/core/ops/pool.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/activation_layout.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {
namespace {

void check_input(const Tensor& x, const char* op) {
  DPLAB_CHECK(x.defined(), "{}: input is undefined", op);
  DPLAB_CHECK(x.dtype() == DType::f32, "{}: input must be f32, got {}", op, x.str());
  DPLAB_CHECK(x.dim() == 4, "{}: input must be 4-D [N, C, H, W], got {}", op, x.str());
  DPLAB_CHECK(x.numel() > 0, "{}: input {} is empty", op, x.str());
}

// Validates the options (PyTorch's rules) and resolves stride 0 to the kernel size.
Pool2dParams to_params(const Pool2dOptions& o, const char* op, bool is_max) {
  Pool2dParams p;
  p.kernel_h = o.kernel[0], p.kernel_w = o.kernel[1];
  p.stride_h = o.stride[0] == 0 ? o.kernel[0] : o.stride[0];
  p.stride_w = o.stride[1] == 0 ? o.kernel[1] : o.stride[1];
  p.pad_h = o.padding[0], p.pad_w = o.padding[1];
  p.dilation_h = o.dilation[0], p.dilation_w = o.dilation[1];
  p.ceil_mode = o.ceil_mode;
  p.count_include_pad = o.count_include_pad;
  for (int i = 0; i < 2; ++i) {
    DPLAB_CHECK(o.kernel[i] >= 1, "{}: kernel must be >= 1, got ({}, {})", op, o.kernel[0],
                o.kernel[1]);
    DPLAB_CHECK(o.stride[i] >= 0,
                "{}: stride must be >= 1 (or 0 for the kernel size), got ({}, {})", op, o.stride[0],
                o.stride[1]);
    DPLAB_CHECK(o.padding[i] >= 0 && o.padding[i] <= o.kernel[i] / 2,
                "{}: padding must be between 0 and half the kernel size, got padding ({}, {}) "
                "kernel ({}, {})",
                op, o.padding[0], o.padding[1], o.kernel[0], o.kernel[1]);
    DPLAB_CHECK(o.dilation[i] >= 1, "{}: dilation must be >= 1, got ({}, {})", op, o.dilation[0],
                o.dilation[1]);
  }
  DPLAB_CHECK(is_max || (o.dilation[0] == 1 && o.dilation[1] == 1),
              "{}: dilation applies to max pooling only, got ({}, {})", op, o.dilation[0],
              o.dilation[1]);
  return p;
}

Shape out_shape(const Tensor& x, const Pool2dParams& p, const char* op) {
  const int64_t OH =
      pool_out_size(x.size(2), p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode);
  const int64_t OW =
      pool_out_size(x.size(3), p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode);
  DPLAB_CHECK(OH >= 1 && OW >= 1,
              "{}: input {}x{} is too small for kernel ({}, {}) dilation ({}, {}) padding ({}, {}) "
              "(output {}x{})",
              op, x.size(2), x.size(3), p.kernel_h, p.kernel_w, p.dilation_h, p.dilation_w, p.pad_h,
              p.pad_w, OH, OW);
  return {x.size(0), x.size(1), OH, OW};
}

class MaxPool2dBackward : public Node {
 public:
  MaxPool2dBackward(Tensor workspace, Shape x_shape, Layout x_layout, const Pool2dParams& p)
      : ws_(std::move(workspace)), x_shape_(std::move(x_shape)), x_layout_(x_layout), p_(p) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor dy = f32_in_layout(grads[0], x_layout_);
    Tensor dx = empty_in_layout(x_shape_, x_layout_, dy.device());
    backend_for(dy.device()).pool.max_pool2d_backward(dy, ws_, dx, p_);
    return {dx};
  }
  std::string name() const override { return "MaxPool2dBackward"; }
  void release() override { ws_ = Tensor(); }

 private:
  Tensor ws_;
  Shape x_shape_;
  Layout x_layout_;
  Pool2dParams p_;
};

class AvgPool2dBackward : public Node {
 public:
  AvgPool2dBackward(Shape x_shape, Layout x_layout, const Pool2dParams& p)
      : x_shape_(std::move(x_shape)), x_layout_(x_layout), p_(p) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor dy = f32_in_layout(grads[0], x_layout_);
    Tensor dx = empty_in_layout(x_shape_, x_layout_, dy.device());
    backend_for(dy.device()).pool.avg_pool2d_backward(dy, dx, p_);
    return {dx};
  }
  std::string name() const override { return "AvgPool2dBackward"; }

 private:
  Shape x_shape_;
  Layout x_layout_;
  Pool2dParams p_;
};

class AdaptiveAvgPool2dBackward : public Node {
 public:
  explicit AdaptiveAvgPool2dBackward(Shape x_shape) : x_shape_(std::move(x_shape)) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor dy = grads[0].to(DType::f32).contiguous();
    Tensor dx = Tensor::empty(x_shape_, DType::f32, dy.device());
    backend_for(dy.device()).pool.adaptive_avg_pool2d_backward(dy, dx);
    return {dx};
  }
  std::string name() const override { return "AdaptiveAvgPool2dBackward"; }

 private:
  Shape x_shape_;
};

// A bf16 activation (autocast, core/autocast.h) is pooled in f32 and the output rounded back to
// bf16 once: widening is exact, and the maximum of bf16 values is one of them, so max pooling
// rounds nothing at all. (Pooling is a small share of a step: no bf16 kernels of its own.)
bool bf16_activation(const Tensor& x) {
  return x.defined() && x.dtype() == DType::bf16;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt) {
  if (bf16_activation(x)) return cast(max_pool2d(cast(x, DType::f32), opt), DType::bf16);
  check_input(x, "max_pool2d");
  const Pool2dParams p = to_params(opt, "max_pool2d", true);
  const Backend& be = backend_for(x.device());
  const Tensor xc = activation_operand(be, x);
  Tensor y = empty_in_layout(out_shape(x, p, "max_pool2d"), xc.layout(), x.device());
  const bool record = any_requires_grad({&x});
  Tensor workspace;
  be.pool.max_pool2d_forward(xc, y, record ? &workspace : nullptr, p);
  if (record)
    set_history(std::make_shared<MaxPool2dBackward>(workspace, x.shape(), xc.layout(), p), {&x},
                {&y});
  return y;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt) {
  if (bf16_activation(x)) return cast(avg_pool2d(cast(x, DType::f32), opt), DType::bf16);
  check_input(x, "avg_pool2d");
  const Pool2dParams p = to_params(opt, "avg_pool2d", false);
  const Backend& be = backend_for(x.device());
  const Tensor xc = activation_operand(be, x);
  Tensor y = empty_in_layout(out_shape(x, p, "avg_pool2d"), xc.layout(), x.device());
  be.pool.avg_pool2d_forward(xc, y, p);
  if (any_requires_grad({&x}))
    set_history(std::make_shared<AvgPool2dBackward>(x.shape(), xc.layout(), p), {&x}, {&y});
  return y;
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  if (bf16_activation(x))
    return cast(adaptive_avg_pool2d(cast(x, DType::f32), output_size), DType::bf16);
  check_input(x, "adaptive_avg_pool2d");
  DPLAB_CHECK(output_size[0] >= 1 && output_size[1] >= 1,
              "adaptive_avg_pool2d: output size must be >= 1, got ({}, {})", output_size[0],
              output_size[1]);
  Tensor y =
      Tensor::empty({x.size(0), x.size(1), output_size[0], output_size[1]}, DType::f32, x.device());
  backend_for(x.device()).pool.adaptive_avg_pool2d_forward(x.contiguous(), y);
  if (any_requires_grad({&x}))
    set_history(std::make_shared<AdaptiveAvgPool2dBackward>(x.shape()), {&x}, {&y});
  return y;
}

}  // namespace dplab
