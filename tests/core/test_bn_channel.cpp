// The per-channel work of the CUDA batch-norm kernels (core/cuda/bn_channel.h) run on the CPU:
// each channel as a kernel block would take it, 256 threads' shares added on the host, against
// the reference kernels (core/cpu/ref/norm.cpp) on the same inputs. Forward (training and eval;
// plain, ReLU, residual add and ReLU; with and without affine parameters and running
// statistics) and backward (batch or running statistics; with the ReLU mask and the residual's
// gradient), on bf16 and f32 activations, over planes smaller and larger than a block's threads.
// On a device, the op-case table checks the kernels themselves (tests/common/op_cases_bf16.cpp).
//
// Tolerance: the two differ only in the order of the double sums, so the statistics agree to
// about 1e-16 relative and an output differs only where its f32 value lands within that of a
// rounding boundary (f32, then bf16): almost never, and then by one step (2^-8 relative for bf16).
// A normalised error of 1e-6 allows a few such elements; a wrong channel, mask or term is off by
// 1e-2 or more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/harness.h"
#include "dplab/core/backend.h"
#include "dplab/core/cuda/bn_channel.h"

namespace dplab {
namespace {

constexpr int64_t kBlock = 256;  // the kernels' threads per block
constexpr double kTol = 1e-6;

using cuda::BnTail;

void run_forward(const cuda::BnForward& a) {
  for (int64_t c = 0; c < a.c; ++c) {
    cuda::BnForwardChannel ch(a, c);
    if (a.training) {
      double s = 0.0;
      for (int64_t t = 0; t < kBlock; ++t) s += ch.sum_x(t, kBlock);
      ch.set_mean(s);
      double ss = 0.0;
      for (int64_t t = 0; t < kBlock; ++t) ss += ch.sum_sq_dev(t, kBlock);
      ch.set_var(ss, true);
    } else {
      ch.use_running();
    }
    for (int64_t t = 0; t < kBlock; ++t) ch.apply(t, kBlock);
  }
}

void run_backward(const cuda::BnBackward& a) {
  for (int64_t c = 0; c < a.c; ++c) {
    cuda::BnBackwardChannel ch(a, c);
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t t = 0; t < kBlock; ++t) {
      double s1 = 0.0, s2 = 0.0;
      ch.sums(t, kBlock, s1, s2);
      sum_dy += s1;
      sum_dy_xhat += s2;
    }
    ch.set_sums(sum_dy, sum_dy_xhat, true);
    for (int64_t t = 0; t < kBlock; ++t) ch.dx(t, kBlock);
  }
}

float* ptr(const Tensor& t) {
  return t.defined() ? t.data<float>() : nullptr;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  if (!want.defined()) return;
  test::expect_close(got.to(DType::f32), want.to(DType::f32), kTol, what);
}

struct Case {
  Shape shape;
  DType dt;
  BnTail tail;
  bool affine, running;
  std::string name() const {
    return shape_str(shape) + " " + std::string(dtype_name(dt)) + " tail " +
           std::to_string(int(tail)) + (affine ? " affine" : "") + (running ? " running" : "");
  }
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (const Shape& s : {Shape{2, 3, 5, 7}, Shape{4, 8, 13, 11}, Shape{1, 2, 1, 1}})
    for (DType dt : {DType::bf16, DType::f32})
      for (BnTail tail : {BnTail::none, BnTail::relu, BnTail::add_relu})
        for (bool affine : {true, false}) cs.push_back({s, dt, tail, affine, affine});
  return cs;
}

struct Inputs {
  Tensor x, r, w, b, rm, rv;
  explicit Inputs(const Case& k) {
    const int64_t C = k.shape[1];
    x = test::random_tensor(k.shape, 11, -2.f, 2.f).to(k.dt);
    r = test::random_tensor(k.shape, 12).to(k.dt);
    if (k.affine) {
      w = test::random_tensor({C}, 13, 0.5f, 1.5f);
      b = test::random_tensor({C}, 14);
    }
    if (k.running) {
      rm = test::random_tensor({C}, 15);
      rv = test::random_tensor({C}, 16, 0.5f, 1.5f);
    }
  }
};

TEST(BnChannel, ForwardMatchesTheReference) {
  const NormKernels& ref = ref_backend().norm;
  for (const Case& k : cases()) {
    for (bool training : {true, false}) {
      if (!training && !k.running) continue;  // eval reads the running statistics
      SCOPED_TRACE(k.name() + (training ? " training" : " eval"));
      const Inputs in(k);
      const int64_t C = k.shape[1];
      // The reference.
      Tensor y_ref = Tensor::empty(k.shape, k.dt), sm_ref = Tensor::empty({C}),
             si_ref = Tensor::empty({C});
      Tensor rm_ref = in.rm.defined() ? in.rm.clone() : Tensor(),
             rv_ref = in.rv.defined() ? in.rv.clone() : Tensor();
      if (training) {
        if (k.tail == BnTail::none)
          ref.batch_norm_forward_train(in.x, in.w, in.b, rm_ref, rv_ref, 0.3f, 1e-5f, y_ref, sm_ref,
                                       si_ref);
        if (k.tail == BnTail::relu)
          ref.batch_norm_relu_forward_train(in.x, in.w, in.b, rm_ref, rv_ref, 0.3f, 1e-5f, y_ref,
                                            sm_ref, si_ref);
        if (k.tail == BnTail::add_relu)
          ref.batch_norm_add_relu_forward_train(in.x, in.r, in.w, in.b, rm_ref, rv_ref, 0.3f, 1e-5f,
                                                y_ref, sm_ref, si_ref);
      } else {
        if (k.tail == BnTail::none)
          ref.batch_norm_forward_eval(in.x, in.w, in.b, in.rm, in.rv, 1e-5f, y_ref);
        if (k.tail == BnTail::relu)
          ref.batch_norm_relu_forward_eval(in.x, in.w, in.b, in.rm, in.rv, 1e-5f, y_ref);
        if (k.tail == BnTail::add_relu)
          ref.batch_norm_add_relu_forward_eval(in.x, in.r, in.w, in.b, in.rm, in.rv, 1e-5f, y_ref);
      }
      // The per-channel work.
      Tensor y = Tensor::empty(k.shape, k.dt), sm = Tensor::empty({C}), si = Tensor::empty({C});
      Tensor rm = in.rm.defined() ? in.rm.clone() : Tensor(),
             rv = in.rv.defined() ? in.rv.clone() : Tensor();
      cuda::BnForward a;
      a.x = in.x.raw_data();
      a.xt = k.dt;
      a.r = in.r.raw_data();
      a.rt = k.dt;
      a.y = y.raw_data();
      a.yt = k.dt;
      a.weight = ptr(in.w);
      a.bias = ptr(in.b);
      a.running_mean = ptr(rm);
      a.running_var = ptr(rv);
      a.momentum = 0.3f;
      a.eps = 1e-5f;
      a.save_mean = ptr(sm);
      a.save_invstd = ptr(si);
      a.n = k.shape[0];
      a.c = C;
      a.hw = k.shape[2] * k.shape[3];
      a.training = training;
      a.tail = k.tail;
      run_forward(a);
      expect_same(y, y_ref, "y");
      if (training) {
        expect_same(sm, sm_ref, "save_mean");
        expect_same(si, si_ref, "save_invstd");
        expect_same(rm, rm_ref, "running_mean");
        expect_same(rv, rv_ref, "running_var");
      }
    }
  }
}

TEST(BnChannel, BackwardMatchesTheReference) {
  const NormKernels& ref = ref_backend().norm;
  for (const Case& k : cases()) {
    for (bool training : {true, false}) {
      SCOPED_TRACE(k.name() + (training ? " batch statistics" : " running statistics"));
      const Inputs in(k);
      const int64_t C = k.shape[1];
      const Tensor dy = test::random_tensor(k.shape, 17).to(k.dt);
      // The statistics and the forward's output the backward pass is given (the mask reads y).
      Tensor mean = test::random_tensor({C}, 18, -0.2f, 0.2f);
      Tensor invstd = test::random_tensor({C}, 19, 0.5f, 1.5f);
      Tensor y = k.tail == BnTail::none ? Tensor() : test::random_tensor(k.shape, 20).to(k.dt);
      auto grads = [&] {
        return std::vector<Tensor>{Tensor::empty(k.shape, k.dt), Tensor::empty(k.shape, k.dt),
                                   Tensor::empty({C}), Tensor::empty({C})};
      };
      std::vector<Tensor> want = grads(), got = grads();  // dx, dresidual, dweight, dbias
      if (k.tail == BnTail::none)
        ref.batch_norm_backward(dy, in.x, in.w, mean, invstd, 1e-5f, training, want[0], want[2],
                                want[3]);
      if (k.tail == BnTail::relu)
        ref.batch_norm_relu_backward(dy, in.x, y, in.w, mean, invstd, 1e-5f, training, want[0],
                                     want[2], want[3]);
      if (k.tail == BnTail::add_relu)
        ref.batch_norm_add_relu_backward(dy, in.x, y, in.w, mean, invstd, 1e-5f, training, want[0],
                                         want[1], want[2], want[3]);
      cuda::BnBackward a;
      a.dy = dy.raw_data();
      a.dyt = k.dt;
      a.x = in.x.raw_data();
      a.xt = k.dt;
      if (y.defined()) {
        a.y = y.raw_data();
        a.yt = k.dt;
      }
      a.weight = ptr(in.w);
      a.mean = ptr(mean);
      a.invstd = ptr(invstd);
      a.training = training;
      a.n = k.shape[0];
      a.c = C;
      a.hw = k.shape[2] * k.shape[3];
      a.dx = got[0].raw_data();
      a.dxt = k.dt;
      if (k.tail == BnTail::add_relu) {
        a.dresidual = got[1].raw_data();
        a.drt = k.dt;
      }
      a.dweight = ptr(got[2]);
      a.dbias = ptr(got[3]);
      run_backward(a);
      expect_same(got[0], want[0], "dx");
      if (k.tail == BnTail::add_relu) expect_same(got[1], want[1], "dresidual");
      expect_same(got[2], want[2], "dweight");
      expect_same(got[3], want[3], "dbias");
    }
  }
}

}  // namespace
}  // namespace dplab
