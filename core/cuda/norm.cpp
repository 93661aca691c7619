// CUDA batch normalisation: cuDNN 9 (CUDNN_BATCHNORM_SPATIAL) where it computes the contract of
// core/kernels/norm.h, dplab's own kernels (norm_kernels.cu) where it does not.
//
// How cuDNN's quantities relate to the contract:
// - exponentialAverageFactor is the contract's momentum m: cuDNN updates
//   running = (1 - factor)·running + factor·batch_stat, PyTorch's convention.
// - cuDNN's running-variance update uses the unbiased batch variance var·M/(M−1) (its header
//   says only "moving average of variance"; the Bessel correction is observed behaviour that
//   PyTorch's cuDNN path, which passes momentum and running_var straight through, relies on to
//   match its native kernels). That is the contract's rule for M > 1.
// - resultSaveInvVariance is, despite its name, 1/sqrt(biased var + eps): the contract's
//   save_invstd. cudnnBatchNormalizationBackward consumes (savedMean, savedInvVariance) as the
//   contract's (mean, invstd); epsilon is then unused by it.
// Where cuDNN does not match, dplab's kernels run instead:
// - M = N·H·W == 1: M/(M−1) is undefined (cuDNN would divide by zero); the contract uses the
//   biased variance (0) there -> launch_bn_train_single.
// - backward with training == false: cuDNN's backward always includes the batch-statistics
//   terms; the contract's eval backward is dx = w·invstd·dy -> launch_bn_backward. The same
//   kernel serves M == 1 in training mode.
// bf16 activations (autocast) and the fused ops (batch norm then ReLU; batch norm, residual add
// and ReLU) run dplab's own kernels on any float dtype, each output written once, with the
// statistics' passes before it (launch_bn_forward / launch_bn_backward; core/cuda/bn_channel.h). On
// f32 activations the fused ops are cuDNN's batch norm followed by the element-wise kernels' ReLU
// or add-ReLU in place, the arithmetic of the unfused ops, so f32 training keeps cuDNN's batch
// norm. Activations are contiguous or nhwc (channels-last, Layout::nhwc); an input [N, C, d2,
// d3, ...] is described to cuDNN as [N, C, d2·d3·..., 1]. nhwc activations of any dtype run
// dplab's kernels (their nhwc schedule, bn_channel.h), so the layout never changes inside
// batch norm. Missing weight/bias become ones/zeros, and a wanted-but-absent output of cuDNN (a
// running stat when only the other is tracked, dx/dweight/dbias when not all are wanted) goes to a
// scratch tensor from the caching allocator.
#include <cudnn.h>

#include <climits>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/cudnn_handle.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/launch_norm.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/kernels/norm.h"

namespace dplab {
namespace {

struct Dims {
  int64_t n, c, hw;
  bool channels_last;  // x is nhwc
};

Dims bn_dims(const Tensor& x, const char* what) {
  DPLAB_CHECK(x.defined() && x.dim() >= 2, "CUDA {}: input {} needs at least [N, C]", what,
              x.defined() ? x.str() : "undefined");
  DPLAB_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::bf16,
              "CUDA {}: input {} must be f32 or bf16", what, x.str());
  DPLAB_CHECK(x.is_contiguous() || x.layout() == Layout::nhwc,
              "CUDA {}: input {} must be contiguous or nhwc", what, x.str());
  DPLAB_CHECK(x.device().is_cuda(), "CUDA {}: input {} is not on a CUDA device", what, x.str());
  int64_t hw = 1;
  for (int d = 2; d < x.dim(); ++d) hw *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], hw, x.layout() == Layout::nhwc};
}

// A defined per-channel tensor: f32 [C], contiguous, on x's device.
void check_channel(const Tensor& t, int64_t C, const Tensor& x, const char* name,
                   const char* what) {
  DPLAB_CHECK(t.dim() == 1 && t.size(0) == C && t.dtype() == DType::f32 && t.is_contiguous() &&
                  t.device() == x.device(),
              "CUDA {}: {} {} must be a contiguous f32 [{}] on {}", what, name, t.str(), C,
              x.device().str());
}
// An activation-like tensor: x's shape, dtype and layout (contiguous or nhwc), on x's device.
void check_like(const Tensor& t, const Tensor& x, const char* name, const char* what) {
  DPLAB_CHECK(t.shape() == x.shape() && t.dtype() == x.dtype() && t.layout() == x.layout() &&
                  (t.is_contiguous() || t.layout() == Layout::nhwc) && t.device() == x.device(),
              "CUDA {}: {} {} must be a {} {} tensor shaped like {}", what, name, t.str(),
              x.layout() == Layout::nhwc ? "nhwc" : "contiguous", dtype_name(x.dtype()), x.str());
}

float* opt(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

int to_int(int64_t v, const char* what) {
  DPLAB_CHECK(v >= 0 && v <= INT_MAX, "CUDA batch_norm: {} = {} exceeds cuDNN's int range", what,
              v);
  return static_cast<int>(v);
}

Tensor filled(int64_t C, float value, const Tensor& x, int dev) {
  Tensor t = Tensor::empty({C}, DType::f32, x.device());
  DPLAB_CUDA_CHECK(cuda::launch_bn_fill(t.data<float>(), C, value, cuda::launch_stream(dev)));
  return t;
}

class TensorDesc {
 public:
  TensorDesc() { DPLAB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// x as [N, C, HW, 1] and the per-channel tensors as [1, C, 1, 1], all f32.
struct BnDescs {
  TensorDesc x, param;
  explicit BnDescs(const Dims& d) {
    DPLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 to_int(d.n, "N"), to_int(d.c, "C"),
                                                 to_int(d.hw, "H*W"), 1));
    DPLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(param.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                 1, to_int(d.c, "C"), 1, 1));
  }
};

// What the fused kernels add after batch norm: nothing, ReLU, or the residual r then ReLU.
struct Tail {
  cuda::BnTail kind = cuda::BnTail::none;
  const Tensor* r = nullptr;  // add_relu: the residual
};

void check_eps(float eps, const char* what) {
  DPLAB_CHECK(eps >= CUDNN_BN_MIN_EPSILON, "CUDA {}: eps {} is below cuDNN's minimum {}", what, eps,
              CUDNN_BN_MIN_EPSILON);
}

// The tail applied in place to an f32 y that cuDNN's batch norm wrote: the element-wise
// kernels' ReLU and add-ReLU, the arithmetic of the unfused ops.
void apply_tail_f32(Tensor& y, const Tail& tail) {
  if (tail.kind == cuda::BnTail::relu) cuda_elementwise_kernels().unary(UnaryOp::relu, 0.f, y, y);
  if (tail.kind == cuda::BnTail::add_relu)
    cuda_elementwise_kernels().binary(BinaryOp::add_relu, y, *tail.r, y);
}

// Scratch for dplab's kernels' partial sums between passes: doubles, held in 8-byte i64
// elements (dplab has no f64 dtype). Released once the launches are enqueued, which is safe:
// every user of the allocator's compute-stream blocks is ordered on that stream.
Tensor partials_for(const Dims& d, const Tensor& x) {
  return Tensor::empty({cuda::bn_partials(d.c, d.n * d.hw, d.channels_last)}, DType::i64,
                       x.device());
}
double* doubles(const Tensor& t) {
  return static_cast<double*>(t.raw_data());
}

// An activation operand of dplab's batch-norm kernels: its data and dtype (left null when t is
// undefined).
template <typename P>
void bind(const Tensor& t, P& data, DType& dtype) {
  if (!t.defined()) return;
  data = t.raw_data_any_layout();
  dtype = t.dtype();
}

cuda::BnForward own_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y,
                            const Dims& d, const Tail& tail) {
  cuda::BnForward a;
  bind(x, a.x, a.xt);
  if (tail.r) bind(*tail.r, a.r, a.rt);
  bind(y, a.y, a.yt);
  a.weight = opt(weight);
  a.bias = opt(bias);
  a.n = d.n;
  a.c = d.c;
  a.hw = d.hw;
  a.channels_last = d.channels_last;
  a.tail = tail.kind;
  return a;
}

void forward_train_any(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                       Tensor& y, Tensor& save_mean, Tensor& save_invstd, const Tail& tail,
                       const char* what) {
  const Dims d = bn_dims(x, what);
  const int64_t m = d.n * d.hw;
  DPLAB_CHECK(m > 0, "CUDA {}: empty batch {}", what, x.str());
  check_like(y, x, "y", what);
  if (tail.r) check_like(*tail.r, x, "residual", what);
  check_channel(save_mean, d.c, x, "save_mean", what);
  check_channel(save_invstd, d.c, x, "save_invstd", what);
  if (weight.defined()) check_channel(weight, d.c, x, "weight", what);
  if (bias.defined()) check_channel(bias, d.c, x, "bias", what);
  if (running_mean.defined()) check_channel(running_mean, d.c, x, "running_mean", what);
  if (running_var.defined()) check_channel(running_var, d.c, x, "running_var", what);
  check_eps(eps, what);
  if (d.c == 0) return;
  const int dev = x.device().index;
  cuda::ScopedDevice guard(dev);
  const cudaStream_t stream = cuda::launch_stream(dev);
  if (x.dtype() != DType::f32 || d.channels_last) {
    cuda::BnForward a = own_forward(x, weight, bias, y, d, tail);
    a.running_mean = opt(running_mean);
    a.running_var = opt(running_var);
    a.momentum = momentum;
    a.eps = eps;
    a.save_mean = save_mean.data<float>();
    a.save_invstd = save_invstd.data<float>();
    a.training = true;
    const Tensor part = partials_for(d, x);
    DPLAB_CUDA_CHECK(cuda::launch_bn_forward(a, doubles(part), stream));
    return;
  }
  if (m == 1) {
    DPLAB_CUDA_CHECK(cuda::launch_bn_train_single(
        x.data<float>(), opt(weight), opt(bias), opt(running_mean), opt(running_var), momentum, eps,
        y.data<float>(), save_mean.data<float>(), save_invstd.data<float>(), d.c, stream));
    apply_tail_f32(y, tail);
    return;
  }
  const Tensor w = weight.defined() ? weight : filled(d.c, 1.0f, x, dev);
  const Tensor b = bias.defined() ? bias : filled(d.c, 0.0f, x, dev);
  // cuDNN takes both running stats or neither; a lone one gets a scratch partner.
  Tensor rm = running_mean, rv = running_var;
  if (rm.defined() != rv.defined()) {
    if (!rm.defined()) rm = filled(d.c, 0.0f, x, dev);
    if (!rv.defined()) rv = filled(d.c, 1.0f, x, dev);
  }
  BnDescs desc(d);
  const float alpha = 1.0f, beta = 0.0f;  // y = normalised x (overwritten)
  DPLAB_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cuda::cudnn_handle(dev), CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, desc.x.get(), x.raw_data(),
      desc.x.get(), y.raw_data(), desc.param.get(), w.raw_data(), b.raw_data(),
      static_cast<double>(momentum), opt(rm), opt(rv), static_cast<double>(eps),
      save_mean.raw_data(), save_invstd.raw_data()));
  apply_tail_f32(y, tail);
}

void forward_eval_any(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y,
                      const Tail& tail, const char* what) {
  const Dims d = bn_dims(x, what);
  check_like(y, x, "y", what);
  if (tail.r) check_like(*tail.r, x, "residual", what);
  DPLAB_CHECK(running_mean.defined() && running_var.defined(),
              "CUDA {}: eval mode needs running_mean and running_var", what);
  check_channel(running_mean, d.c, x, "running_mean", what);
  check_channel(running_var, d.c, x, "running_var", what);
  if (weight.defined()) check_channel(weight, d.c, x, "weight", what);
  if (bias.defined()) check_channel(bias, d.c, x, "bias", what);
  check_eps(eps, what);
  if (x.numel() == 0) return;
  const int dev = x.device().index;
  cuda::ScopedDevice guard(dev);
  if (x.dtype() != DType::f32 || d.channels_last) {
    cuda::BnForward a = own_forward(x, weight, bias, y, d, tail);
    a.running_mean = running_mean.data<float>();
    a.running_var = running_var.data<float>();
    a.eps = eps;
    a.training = false;
    const Tensor part = partials_for(d, x);
    DPLAB_CUDA_CHECK(cuda::launch_bn_forward(a, doubles(part), cuda::launch_stream(dev)));
    return;
  }
  const Tensor w = weight.defined() ? weight : filled(d.c, 1.0f, x, dev);
  const Tensor b = bias.defined() ? bias : filled(d.c, 0.0f, x, dev);
  BnDescs desc(d);
  const float alpha = 1.0f, beta = 0.0f;
  // y = w·(x − running_mean)/sqrt(running_var + eps) + b: the contract's eval formula.
  DPLAB_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      cuda::cudnn_handle(dev), CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, desc.x.get(), x.raw_data(),
      desc.x.get(), y.raw_data(), desc.param.get(), w.raw_data(), b.raw_data(),
      running_mean.raw_data(), running_var.raw_data(), static_cast<double>(eps)));
  apply_tail_f32(y, tail);
}

// y: the forward's output when a ReLU tail masks dy (undefined: none); dresidual: the residual's
// gradient (add_relu; may be undefined).
void backward_any(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                  const Tensor& mean, const Tensor& invstd, float eps, bool training, Tensor& dx,
                  Tensor& dresidual, Tensor& dweight, Tensor& dbias, const char* what) {
  const Dims d = bn_dims(x, what);
  check_like(dy, x, "dy", what);
  if (y.defined()) check_like(y, x, "y", what);
  check_channel(mean, d.c, x, "mean", what);
  check_channel(invstd, d.c, x, "invstd", what);
  if (weight.defined()) check_channel(weight, d.c, x, "weight", what);
  if (dx.defined()) check_like(dx, x, "dx", what);
  if (dresidual.defined()) check_like(dresidual, x, "dresidual", what);
  if (dweight.defined()) check_channel(dweight, d.c, x, "dweight", what);
  if (dbias.defined()) check_channel(dbias, d.c, x, "dbias", what);
  if (!dx.defined() && !dresidual.defined() && !dweight.defined() && !dbias.defined()) return;
  if (d.c == 0) return;
  const int64_t m = d.n * d.hw;
  const int dev = x.device().index;
  cuda::ScopedDevice guard(dev);
  const cudaStream_t stream = cuda::launch_stream(dev);
  // cuDNN's backward where it computes the contract (f32, batch statistics, M > 1), after the
  // ReLU mask when there is one; dplab's kernel otherwise.
  if (!(training && m > 1 && x.dtype() == DType::f32 && !d.channels_last)) {
    cuda::BnBackward a;
    bind(dy, a.dy, a.dyt);
    bind(x, a.x, a.xt);
    bind(y, a.y, a.yt);  // the ReLU mask, when there is one
    a.weight = opt(weight);
    a.mean = mean.data<float>();
    a.invstd = invstd.data<float>();
    a.training = training;
    a.n = d.n;
    a.c = d.c;
    a.hw = d.hw;
    a.channels_last = d.channels_last;
    bind(dx, a.dx, a.dxt);
    bind(dresidual, a.dresidual, a.drt);
    a.dweight = opt(dweight);
    a.dbias = opt(dbias);
    const Tensor part = partials_for(d, x);
    DPLAB_CUDA_CHECK(cuda::launch_bn_backward(a, doubles(part), stream));
    return;
  }
  Tensor g = dy;
  if (y.defined()) {  // dz = relu_backward(dy, y): the residual's gradient, and cuDNN's dy
    g = dresidual.defined() ? dresidual : Tensor::empty(x.shape(), DType::f32, x.device());
    cuda_elementwise_kernels().binary(BinaryOp::relu_backward, dy, y, g);
  }
  if (!dx.defined() && !dweight.defined() && !dbias.defined()) return;  // only dresidual wanted
  const Tensor w = weight.defined() ? weight : filled(d.c, 1.0f, x, dev);
  Tensor gx = dx.defined() ? dx : Tensor::empty(x.shape(), DType::f32, x.device());
  Tensor gw = dweight.defined() ? dweight : Tensor::empty({d.c}, DType::f32, x.device());
  Tensor gb = dbias.defined() ? dbias : Tensor::empty({d.c}, DType::f32, x.device());
  BnDescs desc(d);
  const float one = 1.0f, zero = 0.0f;  // overwrite dx, dweight and dbias
  // The forward's epsilon: cudnn_ops.h declares this argument "Same epsilon as forward pass"
  // (with savedMean/savedInvVariance given it should not change the result, but cuDNN does not
  // promise to ignore it; a fixed 1e-5 was passed before, issue #19 item 5).
  check_eps(eps, what);
  DPLAB_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cuda::cudnn_handle(dev), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, desc.x.get(),
      x.raw_data(), desc.x.get(), g.raw_data(), desc.x.get(), gx.raw_data(), desc.param.get(),
      w.raw_data(), gw.raw_data(), gb.raw_data(), static_cast<double>(eps), mean.raw_data(),
      invstd.raw_data()));
}

// The kernel family's entry points (core/kernels/norm.h).
void forward_train(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                   Tensor& running_var, float momentum, float eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  forward_train_any(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean,
                    save_invstd, {}, "batch_norm_forward_train");
}
void forward_eval(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  forward_eval_any(x, weight, bias, running_mean, running_var, eps, y, {},
                   "batch_norm_forward_eval");
}
void backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
              const Tensor& invstd, float eps, bool training, Tensor& dx, Tensor& dweight,
              Tensor& dbias) {
  Tensor none;
  backward_any(dy, x, Tensor(), weight, mean, invstd, eps, training, dx, none, dweight, dbias,
               "batch_norm_backward");
}

void forward_train_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        Tensor& y, Tensor& save_mean, Tensor& save_invstd) {
  forward_train_any(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean,
                    save_invstd, {cuda::BnTail::relu}, "batch_norm_relu_forward_train");
}
void forward_eval_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, float eps,
                       Tensor& y) {
  forward_eval_any(x, weight, bias, running_mean, running_var, eps, y, {cuda::BnTail::relu},
                   "batch_norm_relu_forward_eval");
}
void backward_relu(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                   const Tensor& mean, const Tensor& invstd, float eps, bool training, Tensor& dx,
                   Tensor& dweight, Tensor& dbias) {
  DPLAB_CHECK(y.defined(), "CUDA batch_norm_relu_backward: the forward's output y is undefined");
  Tensor none;
  backward_any(dy, x, y, weight, mean, invstd, eps, training, dx, none, dweight, dbias,
               "batch_norm_relu_backward");
}

void forward_train_add_relu(const Tensor& x, const Tensor& r, const Tensor& weight,
                            const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                            float momentum, float eps, Tensor& y, Tensor& save_mean,
                            Tensor& save_invstd) {
  forward_train_any(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean,
                    save_invstd, {cuda::BnTail::add_relu, &r}, "batch_norm_add_relu_forward_train");
}
void forward_eval_add_relu(const Tensor& x, const Tensor& r, const Tensor& weight,
                           const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, float eps, Tensor& y) {
  forward_eval_any(x, weight, bias, running_mean, running_var, eps, y, {cuda::BnTail::add_relu, &r},
                   "batch_norm_add_relu_forward_eval");
}
void backward_add_relu(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, float eps, bool training,
                       Tensor& dx, Tensor& dresidual, Tensor& dweight, Tensor& dbias) {
  DPLAB_CHECK(y.defined(),
              "CUDA batch_norm_add_relu_backward: the forward's output y is undefined");
  backward_any(dy, x, y, weight, mean, invstd, eps, training, dx, dresidual, dweight, dbias,
               "batch_norm_add_relu_backward");
}

}  // namespace

NormKernels cuda_norm_kernels() {
  NormKernels k{};
  k.batch_norm_forward_train = forward_train;
  k.batch_norm_forward_eval = forward_eval;
  k.batch_norm_backward = backward;
  k.batch_norm_relu_forward_train = forward_train_relu;
  k.batch_norm_relu_forward_eval = forward_eval_relu;
  k.batch_norm_relu_backward = backward_relu;
  k.batch_norm_add_relu_forward_train = forward_train_add_relu;
  k.batch_norm_add_relu_forward_eval = forward_eval_add_relu;
  k.batch_norm_add_relu_backward = backward_add_relu;
  return k;
}

}  // namespace dplab
