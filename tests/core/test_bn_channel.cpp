// The per-channel work of the CUDA batch-norm kernels (core/cuda/bn_channel.h) run on the CPU:
// each channel as the kernels' S blocks take it (256 threads' shares per block, the blocks'
// partials added in block order), S as the kernels choose it and S = 3, against
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

// How the kernels split a channel: NCHW, S blocks of 256 threads per channel, partials [C][S]
// (bn_total); nhwc, S row blocks of kBnLanes lanes per channel, partials [S][C] (bn_total_rows).
struct Schedule {
  int64_t C, S;
  bool channels_last;
  int64_t lanes() const { return channels_last ? cuda::kBnLanes : kBlock; }
  int64_t threads() const { return lanes() * S; }
  size_t slot(int64_t c, int64_t b) const { return size_t(channels_last ? b * C + c : c * S + b); }
  double total(const std::vector<double>& part, int64_t c) const {
    return channels_last ? cuda::bn_total_rows(part.data(), c, C, S)
                         : cuda::bn_total(part.data(), c, S);
  }
};

// The S blocks of each channel as the kernels run them: block b's lanes b·L .. b·L + L − 1 of
// T = L·S, each block's shares added into its partial, the partials added in block order by
// every block of the next pass.
void run_forward(const cuda::BnForward& a, int64_t S) {
  const Schedule k{a.c, S, a.channels_last};
  const int64_t T = k.threads(), L = k.lanes();
  std::vector<double> sum_x(size_t(a.c * S)), sum_sq(size_t(a.c * S));
  auto partials = [&](auto share, std::vector<double>& part) {
    for (int64_t c = 0; c < a.c; ++c)
      for (int64_t b = 0; b < S; ++b) {
        double p = 0.0;
        for (int64_t t = b * L; t < (b + 1) * L; ++t) p += share(c, t);
        part[k.slot(c, b)] = p;
      }
  };
  if (a.training) {
    partials([&](int64_t c, int64_t t) { return cuda::BnForwardChannel(a, c).sum_x(t, T); }, sum_x);
    partials(
        [&](int64_t c, int64_t t) {
          cuda::BnForwardChannel ch(a, c);
          ch.set_mean(k.total(sum_x, c));
          return ch.sum_sq_dev(t, T);
        },
        sum_sq);
  }
  for (int64_t c = 0; c < a.c; ++c)
    for (int64_t b = 0; b < S; ++b) {
      cuda::BnForwardChannel ch(a, c);
      if (a.training) {
        ch.set_mean(k.total(sum_x, c));
        ch.set_var(k.total(sum_sq, c), b == 0);
      } else {
        ch.use_running();
      }
      for (int64_t t = b * L; t < (b + 1) * L; ++t) ch.apply(t, T);
    }
}

void run_backward(const cuda::BnBackward& a, int64_t S) {
  const Schedule k{a.c, S, a.channels_last};
  const int64_t T = k.threads(), L = k.lanes();
  std::vector<double> sum_dy(size_t(a.c * S)), sum_dy_xhat(size_t(a.c * S));
  for (int64_t c = 0; c < a.c; ++c)
    for (int64_t b = 0; b < S; ++b) {
      const cuda::BnBackwardChannel ch(a, c);
      double p1 = 0.0, p2 = 0.0;
      for (int64_t t = b * L; t < (b + 1) * L; ++t) {
        double s1 = 0.0, s2 = 0.0;
        ch.sums(t, T, s1, s2);
        p1 += s1;
        p2 += s2;
      }
      sum_dy[k.slot(c, b)] = p1;
      sum_dy_xhat[k.slot(c, b)] = p2;
    }
  for (int64_t c = 0; c < a.c; ++c)
    for (int64_t b = 0; b < S; ++b) {
      cuda::BnBackwardChannel ch(a, c);
      ch.set_sums(k.total(sum_dy, c), k.total(sum_dy_xhat, c), b == 0);
      for (int64_t t = b * L; t < (b + 1) * L; ++t) ch.dx(t, T);
    }
}

// The blocks per channel the kernels use for this shape and layout, and 3 (more than the shape
// needs: some blocks' threads have no element at all).
std::vector<int64_t> block_counts(const Shape& shape, bool channels_last) {
  const int64_t m = shape[0] * shape[2] * shape[3];
  return {channels_last ? cuda::bn_row_blocks(m) : cuda::bn_blocks_per_channel(m), 3};
}

// t in the case's layout (the kernels' operand), and back to NCHW for comparing.
Tensor laid_out(const Tensor& t, bool channels_last) {
  return t.defined() && channels_last ? t.to(Layout::nhwc) : t;
}
void* data_of(const Tensor& t) {
  return t.raw_data_any_layout();
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
  bool channels_last;
  std::string name() const {
    return shape_str(shape) + " " + std::string(dtype_name(dt)) + " tail " +
           std::to_string(int(tail)) + (affine ? " affine" : "") + (running ? " running" : "") +
           (channels_last ? " nhwc" : "");
  }
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (const Shape& s :
       {Shape{2, 3, 5, 7}, Shape{4, 8, 13, 11}, Shape{1, 2, 1, 1}, Shape{2, 2, 96, 100}})
    for (DType dt : {DType::bf16, DType::f32})
      for (BnTail tail : {BnTail::none, BnTail::relu, BnTail::add_relu})
        for (bool affine : {true, false})
          for (bool cl : {false, true}) cs.push_back({s, dt, tail, affine, affine, cl});
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

TEST(BnChannel, BlocksPerChannelGrowWithTheValuesUpToACap) {
  EXPECT_EQ(cuda::bn_blocks_per_channel(1), 1);
  EXPECT_EQ(cuda::bn_blocks_per_channel(16384), 1);
  EXPECT_EQ(cuda::bn_blocks_per_channel(16385), 2);
  EXPECT_EQ(cuda::bn_blocks_per_channel(19200), 2);     // the {2, 2, 96, 100} case below
  EXPECT_EQ(cuda::bn_blocks_per_channel(802816), 49);   // a ResNet-50 stem at batch 256
  EXPECT_EQ(cuda::bn_blocks_per_channel(3211264), 64);  // capped
}

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
      const Layout l = k.channels_last ? Layout::nhwc : Layout::strided;
      const Tensor x = laid_out(in.x, k.channels_last), r = laid_out(in.r, k.channels_last);
      Tensor y = Tensor::empty(k.shape, l, k.dt), sm = Tensor::empty({C}), si = Tensor::empty({C});
      Tensor rm = in.rm.defined() ? in.rm.clone() : Tensor(),
             rv = in.rv.defined() ? in.rv.clone() : Tensor();
      cuda::BnForward a;
      a.x = data_of(x);
      a.xt = k.dt;
      a.r = data_of(r);
      a.rt = k.dt;
      a.y = data_of(y);
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
      a.channels_last = k.channels_last;
      a.training = training;
      a.tail = k.tail;
      for (int64_t S : block_counts(k.shape, k.channels_last)) {
        SCOPED_TRACE(std::to_string(S) + " block(s) per channel");
        if (rm.defined()) rm.copy_(in.rm);
        if (rv.defined()) rv.copy_(in.rv);
        y.fill_(0.0);
        run_forward(a, S);
        expect_same(y.contiguous(), y_ref, "y");
        if (training) {
          expect_same(sm, sm_ref, "save_mean");
          expect_same(si, si_ref, "save_invstd");
          expect_same(rm, rm_ref, "running_mean");
          expect_same(rv, rv_ref, "running_var");
        }
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
      const bool cl = k.channels_last;
      const Layout l = cl ? Layout::nhwc : Layout::strided;
      const Tensor dy_l = laid_out(dy, cl), x_l = laid_out(in.x, cl), y_l = laid_out(y, cl);
      std::vector<Tensor> got_l = {Tensor::empty(k.shape, l, k.dt), Tensor::empty(k.shape, l, k.dt),
                                   got[2], got[3]};
      cuda::BnBackward a;
      a.dy = data_of(dy_l);
      a.dyt = k.dt;
      a.x = data_of(x_l);
      a.xt = k.dt;
      if (y.defined()) {
        a.y = data_of(y_l);
        a.yt = k.dt;
      }
      a.weight = ptr(in.w);
      a.mean = ptr(mean);
      a.invstd = ptr(invstd);
      a.training = training;
      a.n = k.shape[0];
      a.c = C;
      a.hw = k.shape[2] * k.shape[3];
      a.channels_last = cl;
      a.dx = data_of(got_l[0]);
      a.dxt = k.dt;
      if (k.tail == BnTail::add_relu) {
        a.dresidual = data_of(got_l[1]);
        a.drt = k.dt;
      }
      a.dweight = ptr(got[2]);
      a.dbias = ptr(got[3]);
      for (int64_t S : block_counts(k.shape, cl)) {
        SCOPED_TRACE(std::to_string(S) + " block(s) per channel");
        for (Tensor& g : got_l) g.fill_(0.0);
        run_backward(a, S);
        expect_same(got_l[0].contiguous(), want[0], "dx");
        if (k.tail == BnTail::add_relu) expect_same(got_l[1].contiguous(), want[1], "dresidual");
        expect_same(got[2], want[2], "dweight");
        expect_same(got[3], want[3], "dbias");
      }
    }
  }
}

}  // namespace
}  // namespace dplab
