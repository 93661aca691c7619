// Reference batch normalisation: per channel, plain loops over (n, hw), statistics in double.
#include <cmath>
#include <vector>

#include "dplab/core/cpu/ref/f32_compute.h"
#include "dplab/core/functors.h"
#include "dplab/core/kernels/norm.h"

namespace dplab {
namespace {

struct Dims {
  int64_t n, c, hw;
};

Dims bn_dims(const Tensor& x, const char* what) {
  DPLAB_CHECK(x.dim() >= 2, "{}: input {} needs at least [N, C]", what, x.str());
  check_dtype(x, DType::f32, what);
  DPLAB_CHECK(x.is_contiguous(), "{}: input {} must be contiguous", what, x.str());
  int64_t hw = 1;
  for (int d = 2; d < x.dim(); ++d) hw *= x.shape()[d];
  return {x.shape()[0], x.shape()[1], hw};
}

const float* opt_data(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}
float* opt_mut(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

void forward_train(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                   Tensor& running_var, float momentum, float eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd) {
  const Dims d = bn_dims(x, "batch_norm");
  const int64_t m = d.n * d.hw;
  DPLAB_CHECK(m > 0, "batch_norm: empty batch {}", x.str());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  float* rm = opt_mut(running_mean);
  float* rv = opt_mut(running_var);
  for (int64_t c = 0; c < d.c; ++c) {
    double s = 0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t i = 0; i < d.hw; ++i) s += xp[(n * d.c + c) * d.hw + i];
    const double mean = s / m;
    double ss = 0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t i = 0; i < d.hw; ++i) {
        const double dv = xp[(n * d.c + c) * d.hw + i] - mean;
        ss += dv * dv;
      }
    const double var = ss / m;  // biased: what normalises the batch
    const double invstd = 1.0 / std::sqrt(var + eps);
    save_mean.data<float>()[c] = static_cast<float>(mean);
    save_invstd.data<float>()[c] = static_cast<float>(invstd);
    const double scale = w ? w[c] : 1.0, shift = b ? b[c] : 0.0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t i = 0; i < d.hw; ++i) {
        const int64_t k = (n * d.c + c) * d.hw + i;
        yp[k] = static_cast<float>((xp[k] - mean) * invstd * scale + shift);
      }
    if (rm) rm[c] = static_cast<float>((1.0 - momentum) * rm[c] + momentum * mean);
    if (rv) {
      const double unbiased = m > 1 ? ss / (m - 1) : var;
      rv[c] = static_cast<float>((1.0 - momentum) * rv[c] + momentum * unbiased);
    }
  }
}

void forward_eval(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const Dims d = bn_dims(x, "batch_norm");
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* w = opt_data(weight);
  const float* b = opt_data(bias);
  const float* rm = running_mean.data<float>();
  const float* rv = running_var.data<float>();
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c) {
      const double invstd = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
      const double scale = w ? w[c] : 1.0, shift = b ? b[c] : 0.0;
      for (int64_t i = 0; i < d.hw; ++i) {
        const int64_t k = (n * d.c + c) * d.hw + i;
        yp[k] = static_cast<float>((xp[k] - rm[c]) * invstd * scale + shift);
      }
    }
}

void backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
              const Tensor& invstd, float /*eps: invstd has it*/, bool training, Tensor& dx,
              Tensor& dweight, Tensor& dbias) {
  const Dims d = bn_dims(x, "batch_norm backward");
  const int64_t m = d.n * d.hw;
  const float* xp = x.data<float>();
  const float* g = dy.data<float>();
  const float* w = opt_data(weight);
  const float* mu = mean.data<float>();
  const float* is = invstd.data<float>();
  for (int64_t c = 0; c < d.c; ++c) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t i = 0; i < d.hw; ++i) {
        const int64_t k = (n * d.c + c) * d.hw + i;
        sum_dy += g[k];
        sum_dy_xhat += g[k] * (xp[k] - mu[c]) * static_cast<double>(is[c]);
      }
    if (dweight.defined()) dweight.data<float>()[c] = static_cast<float>(sum_dy_xhat);
    if (dbias.defined()) dbias.data<float>()[c] = static_cast<float>(sum_dy);
    if (!dx.defined()) continue;
    const double scale = (w ? w[c] : 1.0) * is[c];
    float* dxp = dx.data<float>();
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t i = 0; i < d.hw; ++i) {
        const int64_t k = (n * d.c + c) * d.hw + i;
        if (training) {
          const double xhat = (xp[k] - mu[c]) * static_cast<double>(is[c]);
          dxp[k] = static_cast<float>(scale * (g[k] - sum_dy / m - xhat * sum_dy_xhat / m));
        } else {
          dxp[k] = static_cast<float>(scale * g[k]);
        }
      }
  }
}

// Batch norm then ReLU: the definition, literally (the fast backends fuse the two passes).
void relu_in_place(Tensor& y) {
  float* p = y.data<float>();
  const fn::Relu relu;
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = relu(p[i]);
}

// y = relu(y + r), contiguous f32.
void add_relu_in_place(Tensor& y, const Tensor& r) {
  check_shape(r, y.shape(), "batch_norm_add_relu: residual");
  float* p = y.data<float>();
  const float* q = r.data<float>();
  const fn::AddRelu add_relu;
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = add_relu(p[i], q[i]);
}

void forward_train_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        Tensor& y, Tensor& save_mean, Tensor& save_invstd) {
  forward_train(x, weight, bias, running_mean, running_var, momentum, eps, y, save_mean,
                save_invstd);
  relu_in_place(y);
}

void forward_eval_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, float eps,
                       Tensor& y) {
  forward_eval(x, weight, bias, running_mean, running_var, eps, y);
  relu_in_place(y);
}

void backward_relu(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                   const Tensor& mean, const Tensor& invstd, float eps, bool training, Tensor& dx,
                   Tensor& dweight, Tensor& dbias) {
  check_shape(y, dy.shape(), "batch_norm_relu backward: output");
  DPLAB_CHECK(dy.is_contiguous() && y.is_contiguous(),
              "batch_norm_relu backward: dy {} and y {} must be contiguous", dy.str(), y.str());
  Tensor masked = Tensor::empty(dy.shape());
  const float* g = dy.data<float>();
  const float* out = y.data<float>();
  float* m = masked.data<float>();
  const fn::ReluBackward relu_backward;
  for (int64_t i = 0; i < dy.numel(); ++i) m[i] = relu_backward(g[i], out[i]);
  backward(masked, x, weight, mean, invstd, eps, training, dx, dweight, dbias);
}

// bf16 activations (autocast) and blocked layouts: the f32 definition above, as f32_compute.h
// says.
using ref::as_f32;
using ref::f32_out;
using ref::write_back;

template <bool Relu>
void any_forward_train(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                       Tensor& y, Tensor& save_mean, Tensor& save_invstd) {
  Tensor yf = f32_out(y);
  (Relu ? forward_train_relu : forward_train)(as_f32(x), weight, bias, running_mean, running_var,
                                              momentum, eps, yf, save_mean, save_invstd);
  write_back(yf, y);
}

template <bool Relu>
void any_forward_eval(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  Tensor yf = f32_out(y);
  (Relu ? forward_eval_relu : forward_eval)(as_f32(x), weight, bias, running_mean, running_var, eps,
                                            yf);
  write_back(yf, y);
}

void any_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                  const Tensor& invstd, float eps, bool training, Tensor& dx, Tensor& dweight,
                  Tensor& dbias) {
  Tensor dxf = f32_out(dx);
  backward(as_f32(dy), as_f32(x), weight, mean, invstd, eps, training, dxf, dweight, dbias);
  write_back(dxf, dx);
}

void any_backward_relu(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, float eps, bool training,
                       Tensor& dx, Tensor& dweight, Tensor& dbias) {
  Tensor dxf = f32_out(dx);
  backward_relu(as_f32(dy), as_f32(x), as_f32(y), weight, mean, invstd, eps, training, dxf, dweight,
                dbias);
  write_back(dxf, dx);
}

// Batch norm, residual, ReLU: the definition, literally, on the kernels above (inputs of any
// float dtype or layout through as_f32; outputs rounded once).
void any_forward_train_add_relu(const Tensor& x, const Tensor& r, const Tensor& weight,
                                const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                                float momentum, float eps, Tensor& y, Tensor& save_mean,
                                Tensor& save_invstd) {
  Tensor yf = Tensor::empty(y.shape());
  forward_train(as_f32(x), weight, bias, running_mean, running_var, momentum, eps, yf, save_mean,
                save_invstd);
  add_relu_in_place(yf, as_f32(r));
  y.copy_(yf);
}

void any_forward_eval_add_relu(const Tensor& x, const Tensor& r, const Tensor& weight,
                               const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, float eps, Tensor& y) {
  Tensor yf = Tensor::empty(y.shape());
  forward_eval(as_f32(x), weight, bias, running_mean, running_var, eps, yf);
  add_relu_in_place(yf, as_f32(r));
  y.copy_(yf);
}

void any_backward_add_relu(const Tensor& dy, const Tensor& x, const Tensor& y, const Tensor& weight,
                           const Tensor& mean, const Tensor& invstd, float eps, bool training,
                           Tensor& dx, Tensor& dresidual, Tensor& dweight, Tensor& dbias) {
  const Tensor g = as_f32(dy), out = as_f32(y);
  check_shape(out, g.shape(), "batch_norm_add_relu backward: output");
  Tensor dz = Tensor::empty(g.shape());
  const float* gp = g.data<float>();
  const float* op = out.data<float>();
  float* zp = dz.data<float>();
  const fn::ReluBackward relu_backward;
  for (int64_t i = 0; i < g.numel(); ++i) zp[i] = relu_backward(gp[i], op[i]);
  Tensor dxf = f32_out(dx);
  backward(dz, as_f32(x), weight, mean, invstd, eps, training, dxf, dweight, dbias);
  write_back(dxf, dx);
  if (dresidual.defined()) dresidual.copy_(dz);
}

}  // namespace

NormKernels ref_norm_kernels() {
  NormKernels k{};
  k.batch_norm_forward_train = any_forward_train<false>;
  k.batch_norm_forward_eval = any_forward_eval<false>;
  k.batch_norm_backward = any_backward;
  k.batch_norm_relu_forward_train = any_forward_train<true>;
  k.batch_norm_relu_forward_eval = any_forward_eval<true>;
  k.batch_norm_relu_backward = any_backward_relu;
  k.batch_norm_add_relu_forward_train = any_forward_train_add_relu;
  k.batch_norm_add_relu_forward_eval = any_forward_eval_add_relu;
  k.batch_norm_add_relu_backward = any_backward_add_relu;
  return k;
}

}  // namespace dplab
