// CUDA pooling: dplab's own kernels (pool_kernels.cu) for every pooling op, none from cuDNN,
// because cuDNN's pooling does not compute this contract exactly:
// - max pooling: cuDNN has no dilation; its backward needs x and y (the contract passes only a
//   backend-private workspace); and its choice among tied or NaN window elements is not
//   documented, while the contract routes the gradient to PyTorch's argmax (first maximum in
//   scan order, a NaN taking over). Here the workspace is int32 [N, C, OH, OW] holding
//   h * W + w within the input plane (-1 for a window without input elements).
// - average pooling: with ceil_mode the last window may hang over the padded input; the
//   contract's count_include_pad divisor is the window clipped to the padded input, cuDNN's
//   INCLUDE_PADDING divisor is always kh·kw, and cuDNN sizes outputs with floor only.
// - adaptive average pooling has no cuDNN counterpart (variable windows).
// The kernels compute each output exactly as core/cpu/ref/pool.cpp (double window sums in the
// forward passes; the backward passes gather, adding in the reference's scatter order), so
// they are deterministic and need no atomics. They read NCHW: max and average pooling of nhwc
// activations (Layout::nhwc, which the ops hand this backend) run on NCHW copies and write their
// output back in nhwc (on_nchw), values unchanged. (A ResNet's max pooling sees NCHW: its stem
// convolution, with 3 input channels, writes NCHW.)
#include <climits>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/launch_pool.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/kernels/pool.h"

namespace dplab {
namespace {

// x-like [N, C, H, W] and y-like [N, C, OH, OW], contiguous f32 on one CUDA device.
cuda::PoolGeom geometry(const Tensor& x, const Tensor& y, const char* what, const char* xn,
                        const char* yn) {
  for (const auto& [t, name] : {std::pair{&x, xn}, std::pair{&y, yn}}) {
    DPLAB_CHECK(t->defined() && t->dim() == 4 && t->dtype() == DType::f32 && t->is_contiguous(),
                "CUDA {}: {} must be a contiguous 4-D f32 tensor, got {}", what, name,
                t->defined() ? t->str() : "undefined");
    DPLAB_CHECK(t->device().is_cuda() && t->device() == x.device(),
                "CUDA {}: {} {} is not on the CUDA device of {} {}", what, name, t->str(), xn,
                x.str());
  }
  DPLAB_CHECK(x.size(0) == y.size(0) && x.size(1) == y.size(1),
              "CUDA {}: {} {} and {} {} do not match", what, xn, shape_str(x.shape()), yn,
              shape_str(y.shape()));
  cuda::PoolGeom g{};
  g.P = x.size(0) * x.size(1);
  g.H = x.size(2);
  g.W = x.size(3);
  g.OH = y.size(2);
  g.OW = y.size(3);
  return g;
}

// The window parameters, and that y's spatial shape is the contract's for them.
void windowed(cuda::PoolGeom& g, const Pool2dParams& p, bool dilated, const char* what) {
  DPLAB_CHECK(p.kernel_h >= 1 && p.kernel_w >= 1 && p.stride_h >= 1 && p.stride_w >= 1 &&
                  p.pad_h >= 0 && p.pad_w >= 0 && p.dilation_h >= 1 && p.dilation_w >= 1,
              "CUDA {}: invalid kernel {}x{} stride {}x{} pad {}x{} dilation {}x{}", what,
              p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h,
              p.dilation_w);
  g.kh = p.kernel_h;
  g.kw = p.kernel_w;
  g.sh = p.stride_h;
  g.sw = p.stride_w;
  g.ph = p.pad_h;
  g.pw = p.pad_w;
  g.dh = dilated ? p.dilation_h : 1;
  g.dw = dilated ? p.dilation_w : 1;
  g.count_include_pad = p.count_include_pad;
  const int64_t oh = pool_out_size(g.H, g.kh, g.sh, g.ph, g.dh, p.ceil_mode);
  const int64_t ow = pool_out_size(g.W, g.kw, g.sw, g.pw, g.dw, p.ceil_mode);
  DPLAB_CHECK(g.OH == oh && g.OW == ow,
              "CUDA {}: output plane {}x{} but kernel {}x{} stride {}x{} pad {}x{} dilation "
              "{}x{} ceil_mode {} on {}x{} gives {}x{}",
              what, g.OH, g.OW, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, p.ceil_mode, g.H,
              g.W, oh, ow);
}

int stream_device(const Tensor& t) {
  return t.device().index;
}

// run(in, out) on the NCHW form of `in` and, when `out` is nhwc, on an NCHW scratch copied back
// into it afterwards.
template <class Run>
void on_nchw(const Tensor& in, Tensor& out, Run run) {
  if (!in.is_blocked() && !out.is_blocked()) return run(in, out);
  Tensor o = out.is_blocked() ? Tensor::empty(out.shape(), out.dtype(), out.device()) : out;
  run(in.contiguous(), o);
  if (out.is_blocked()) out.copy_(o);
}

void max_forward_nchw(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  const char* what = "max_pool2d_forward";
  cuda::PoolGeom g = geometry(x, y, what, "x", "y");
  windowed(g, p, true, what);
  // argmax is an int32 index within one plane.
  DPLAB_CHECK(g.H * g.W <= INT_MAX, "CUDA {}: input plane {}x{} exceeds int32 argmax indices", what,
              g.H, g.W);
  const int dev = stream_device(x);
  cuda::ScopedDevice guard(dev);
  int32_t* argmax = nullptr;
  if (workspace) {
    *workspace = Tensor::empty(y.shape(), DType::i32, x.device());
    argmax = workspace->data<int32_t>();
  }
  DPLAB_CUDA_CHECK(cuda::launch_max_pool_forward(x.data<float>(), y.data<float>(), argmax, g,
                                                 cuda::launch_stream(dev)));
}

void max_backward_nchw(const Tensor& dy, const Tensor& workspace, Tensor& dx,
                       const Pool2dParams& p) {
  const char* what = "max_pool2d_backward";
  cuda::PoolGeom g = geometry(dx, dy, what, "dx", "dy");
  windowed(g, p, true, what);
  DPLAB_CHECK(workspace.defined() && workspace.dtype() == DType::i32 &&
                  workspace.shape() == dy.shape() && workspace.is_contiguous() &&
                  workspace.device() == dy.device(),
              "CUDA {}: workspace {} is not this backend's int32 argmax for dy {}", what,
              workspace.defined() ? workspace.str() : "undefined", dy.str());
  const int dev = stream_device(dx);
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_max_pool_backward(dy.data<float>(), workspace.data<int32_t>(),
                                                  dx.data<float>(), g, cuda::launch_stream(dev)));
}

void avg_forward_nchw(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const char* what = "avg_pool2d_forward";
  cuda::PoolGeom g = geometry(x, y, what, "x", "y");
  windowed(g, p, false, what);
  const int dev = stream_device(x);
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(
      cuda::launch_avg_pool_forward(x.data<float>(), y.data<float>(), g, cuda::launch_stream(dev)));
}

void avg_backward_nchw(const Tensor& dy, Tensor& dx, const Pool2dParams& p) {
  const char* what = "avg_pool2d_backward";
  cuda::PoolGeom g = geometry(dx, dy, what, "dx", "dy");
  windowed(g, p, false, what);
  const int dev = stream_device(dx);
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_avg_pool_backward(dy.data<float>(), dx.data<float>(), g,
                                                  cuda::launch_stream(dev)));
}

void max_forward(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  on_nchw(x, y, [&](const Tensor& i, Tensor& o) { max_forward_nchw(i, o, workspace, p); });
}
void max_backward(const Tensor& dy, const Tensor& workspace, Tensor& dx, const Pool2dParams& p) {
  on_nchw(dy, dx, [&](const Tensor& i, Tensor& o) { max_backward_nchw(i, workspace, o, p); });
}
void avg_forward(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  on_nchw(x, y, [&](const Tensor& i, Tensor& o) { avg_forward_nchw(i, o, p); });
}
void avg_backward(const Tensor& dy, Tensor& dx, const Pool2dParams& p) {
  on_nchw(dy, dx, [&](const Tensor& i, Tensor& o) { avg_backward_nchw(i, o, p); });
}

// An output cell needs at least one input element (an empty output is fine).
void check_adaptive(const cuda::PoolGeom& g, const char* what) {
  DPLAB_CHECK((g.H > 0 || g.OH == 0) && (g.W > 0 || g.OW == 0),
              "CUDA {}: cannot pool a {}x{} plane to {}x{}", what, g.H, g.W, g.OH, g.OW);
}

void adaptive_forward(const Tensor& x, Tensor& y) {
  const char* what = "adaptive_avg_pool2d_forward";
  cuda::PoolGeom g = geometry(x, y, what, "x", "y");
  check_adaptive(g, what);
  const int dev = stream_device(x);
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_adaptive_avg_forward(x.data<float>(), y.data<float>(), g,
                                                     cuda::launch_stream(dev)));
}

void adaptive_backward(const Tensor& dy, Tensor& dx) {
  const char* what = "adaptive_avg_pool2d_backward";
  cuda::PoolGeom g = geometry(dx, dy, what, "dx", "dy");
  check_adaptive(g, what);
  const int dev = stream_device(dx);
  cuda::ScopedDevice guard(dev);
  DPLAB_CUDA_CHECK(cuda::launch_adaptive_avg_backward(dy.data<float>(), dx.data<float>(), g,
                                                      cuda::launch_stream(dev)));
}

}  // namespace

PoolKernels cuda_pool_kernels() {
  PoolKernels k{};
  k.max_pool2d_forward = max_forward;
  k.max_pool2d_backward = max_backward;
  k.avg_pool2d_forward = avg_forward;
  k.avg_pool2d_backward = avg_backward;
  k.adaptive_avg_pool2d_forward = adaptive_forward;
  k.adaptive_avg_pool2d_backward = adaptive_backward;
  return k;
}

}  // namespace dplab
