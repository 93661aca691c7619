// CUDA softmax / cross-entropy family: validation here (ref's checks and messages), kernels in
// loss_kernels.cu, all on the device's compute stream.
//
// No host synchronisation: cross_entropy_forward does not check the targets' range on the host
// (that would wait for the device at every forward). A target outside [0, C) gives its row a
// NaN lse and loss instead (core/kernels/loss.h; no out-of-bounds read), so the loss is NaN;
// the training loop's non-finite check then names the bad target (train/loop/nonfinite_guard.h).
#include <cstdint>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/kernel_scope.h"
#include "dplab/core/cuda/launch_loss.h"
#include "dplab/core/kernels/loss.h"

namespace dplab {
namespace {

// out must be f32, contiguous, shaped like `like`, on its device.
void check_like(const Tensor& out, const Tensor& like, const char* what) {
  check_shape(out, like.shape(), what);
  check_dtype(out, DType::f32, what);
  DPLAB_CHECK(out.is_contiguous(), "{}: {} must be contiguous", what, out.str());
  check_same_device(out, like, what);
}

void softmax_forward(const Tensor& x, int dim, bool log, Tensor& y) {
  const SoftmaxRows r = softmax_rows(x, dim, "CUDA softmax");
  check_like(y, x, "CUDA softmax output");
  cuda::KernelScope scope(x, "softmax");
  DPLAB_CUDA_CHECK(cuda::launch_softmax_forward(x.data<float>(), y.data<float>(), r.outer, r.c,
                                                r.inner, log, scope.stream()));
}

void softmax_backward(const Tensor& y, const Tensor& dy, int dim, bool log, Tensor& dx) {
  const SoftmaxRows r = softmax_rows(y, dim, "CUDA softmax backward");
  check_like(dy, y, "CUDA softmax backward dy");
  check_like(dx, y, "CUDA softmax backward dx");
  cuda::KernelScope scope(y, "softmax backward");
  DPLAB_CUDA_CHECK(cuda::launch_softmax_backward(y.data<float>(), dy.data<float>(),
                                                 dx.data<float>(), r.outer, r.c, r.inner, log,
                                                 scope.stream()));
}

// ref's check_ce without the range check (see the top). Returns the contiguous targets.
Tensor check_ce(const Tensor& logits, const Tensor& target) {
  DPLAB_CHECK(logits.dim() == 2, "cross_entropy: logits {} must be [N, C]", logits.str());
  check_dtype(logits, DType::f32, "cross_entropy logits");
  DPLAB_CHECK(logits.is_contiguous(), "cross_entropy: logits {} must be contiguous", logits.str());
  check_shape(target, {logits.shape()[0]}, "cross_entropy target");
  check_dtype(target, DType::i64, "cross_entropy");
  check_same_device(logits, target, "cross_entropy");
  return target.contiguous();
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, float smoothing,
                           Tensor& loss, Tensor& lse) {
  cuda::KernelScope scope(logits, "cross_entropy");
  const Tensor t = check_ce(logits, target);
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  check_shape(loss, {}, "cross_entropy loss");
  check_dtype(loss, DType::f32, "cross_entropy loss");
  check_shape(lse, {n}, "cross_entropy lse");
  check_dtype(lse, DType::f32, "cross_entropy lse");
  DPLAB_CHECK(lse.is_contiguous(), "cross_entropy: lse {} must be contiguous", lse.str());
  check_same_device(loss, logits, "cross_entropy loss");
  check_same_device(lse, logits, "cross_entropy lse");
  // Per-row losses in double (i64 storage: 8-byte elements), summed in a fixed order after.
  const Tensor row_loss = Tensor::empty({n > 0 ? n : 1}, DType::i64, logits.device());
  DPLAB_CUDA_CHECK(cuda::launch_cross_entropy_forward(
      logits.data<float>(), t.data<int64_t>(), n, nc, smoothing, loss.data<float>(),
      lse.data<float>(), static_cast<double*>(row_loss.raw_data()), scope.stream()));
}

void cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse,
                            float smoothing, float grad_scale, Tensor& dlogits) {
  cuda::KernelScope scope(logits, "cross_entropy backward");
  // The gradient kernel only compares each class index with target[i], so even a bad target
  // reads nothing out of bounds; its row's NaN lse makes the row's gradient NaN.
  const Tensor t = check_ce(logits, target);
  const int64_t n = logits.shape()[0], nc = logits.shape()[1];
  check_shape(lse, {n}, "cross_entropy lse");
  check_dtype(lse, DType::f32, "cross_entropy lse");
  DPLAB_CHECK(lse.is_contiguous(), "cross_entropy: lse {} must be contiguous", lse.str());
  check_like(dlogits, logits, "cross_entropy dlogits");
  check_same_device(lse, logits, "cross_entropy lse");
  DPLAB_CUDA_CHECK(cuda::launch_cross_entropy_backward(
      logits.data<float>(), t.data<int64_t>(), lse.data<float>(), n, nc, smoothing, grad_scale,
      dlogits.data<float>(), scope.stream()));
}

}  // namespace

LossKernels cuda_loss_kernels() {
  LossKernels k{};
  k.softmax_forward = softmax_forward;
  k.softmax_backward = softmax_backward;
  k.cross_entropy_forward = cross_entropy_forward;
  k.cross_entropy_backward = cross_entropy_backward;
  return k;
}

}  // namespace dplab
