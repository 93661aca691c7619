#include "dplab/comm/powersgd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/error.h"

namespace dplab {

void orthogonalize_columns(float* x, int64_t rows, int64_t r) {
  for (int64_t c = 0; c < r; ++c) {
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += double(x[i * r + c]) * x[i * r + c];
    norm = std::sqrt(norm);
    if (norm > 0)
      for (int64_t i = 0; i < rows; ++i) x[i * r + c] = float(x[i * r + c] / norm);
    // Remove column c from the later ones (modified Gram-Schmidt).
    for (int64_t c2 = c + 1; c2 < r; ++c2) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(x[i * r + c]) * x[i * r + c2];
      for (int64_t i = 0; i < rows; ++i) x[i * r + c2] = float(x[i * r + c2] - dot * x[i * r + c]);
    }
  }
}

PowerSgdCompressor::PowerSgdCompressor(const CompressOptions& opt,
                                       const std::vector<std::vector<BucketTensor>>& buckets)
    : opt_(opt) {
  DPLAB_CHECK(opt.rank >= 1, "powersgd.rank: expected >= 1, got {}", opt.rank);
  for (const auto& ts : buckets) {
    Bucket bk;
    for (const auto& t : ts) {
      Matrix mx;
      mx.offset = t.offset;
      mx.numel = t.numel;
      bk.numel = std::max(bk.numel, t.offset + t.numel);
      if (t.shape.size() >= 2 && t.numel > 0) {
        mx.n = t.shape[0];
        mx.m = t.numel / mx.n;
        const int64_t r = std::min({mx.n, mx.m, opt.rank});
        // PyTorch's _should_compress: worth it iff (n + m) r * rate < n m.
        if (double(mx.n + mx.m) * double(r) * opt.min_compression_rate < double(mx.n * mx.m)) {
          mx.r = r;
          mx.p_offset = bk.p_numel;
          mx.q_offset = bk.q_numel;
          bk.p_numel += mx.n * r;
          bk.q_numel += mx.m * r;
        }
      }
      if (mx.r == 0) bk.u_numel += t.numel;
      bk.mats.push_back(mx);
    }
    bk.residual = Tensor::zeros({bk.numel});
    bk.p = Tensor::zeros({bk.p_numel});
    bk.q = Tensor::zeros({bk.q_numel});
    bk.u = Tensor::zeros({bk.u_numel});
    buckets_.push_back(std::move(bk));
  }
}

bool PowerSgdCompressor::compressing() const {
  if (step_ == 0 || step_ - 1 < opt_.start_step) return false;  // the last step index: step_ - 1
  for (const Bucket& bk : buckets_)
    if (bk.p_numel > 0) return true;
  return false;  // no matrix passes min_compression_rate: every bucket travels plainly
}

// Q ~ N(0, 1) from the run seed, the bucket and (without warm start) the step: the same on every
// rank. Box-Muller on 53-bit uniforms from mt19937_64 (both fully specified by the standard, unlike
// std::normal_distribution), so the draw does not depend on the standard library.
void PowerSgdCompressor::init_q(int b) {
  Bucket& bk = buckets_[b];
  std::seed_seq seq{uint32_t(opt_.seed),
                    uint32_t(opt_.seed >> 32),
                    uint32_t(b),
                    uint32_t(opt_.warm_start ? 0 : step_),
                    uint32_t(opt_.warm_start ? 0 : step_ >> 32),
                    0x9051u};
  std::mt19937_64 gen(seq);
  auto uniform = [&] { return (double(gen() >> 11) + 0.5) * 0x1.0p-53; };  // in (0, 1)
  float* q = bk.q.data<float>();
  for (int64_t i = 0; i < bk.q_numel; i += 2) {
    const double rad = std::sqrt(-2.0 * std::log(uniform())),
                 ang = 2.0 * std::numbers::pi * uniform();
    q[i] = float(rad * std::cos(ang));
    if (i + 1 < bk.q_numel) q[i + 1] = float(rad * std::sin(ang));
  }
  bk.q_ready = true;
}

void PowerSgdCompressor::reduce(int b, const Tensor& g, Communicator& comm, bool average,
                                BucketContext& ctx) {
  Bucket& bk = buckets_[b];
  DPLAB_CHECK(g.numel() == bk.numel, "powersgd: bucket {} has {} elements, planned {}", b,
              g.numel(), bk.numel);
  const ReduceOp op = average ? ReduceOp::average : ReduceOp::sum;
  if (step_ < opt_.start_step || bk.p_numel == 0) {
    // Plain allreduce: before start_step, or nothing in this bucket is worth compressing.
    ctx.allreduce(comm, g, op);
    return;
  }
  float* gp = g.data<float>();
  // Uncompressed tensors: packed, one allreduce, exact.
  if (bk.u_numel > 0) {
    float* u = bk.u.data<float>();
    int64_t at = 0;
    for (const Matrix& mx : bk.mats)
      if (mx.r == 0) {
        std::copy(gp + mx.offset, gp + mx.offset + mx.numel, u + at);
        at += mx.numel;
      }
    ctx.allreduce(comm, bk.u, op);
    at = 0;
    for (const Matrix& mx : bk.mats)
      if (mx.r == 0) {
        std::copy(u + at, u + at + mx.numel, gp + mx.offset);
        at += mx.numel;
      }
  }
  if (!opt_.warm_start || !bk.q_ready) init_q(b);
  float* e = bk.residual.data<float>();
  float* p = bk.p.data<float>();
  float* q = bk.q.data<float>();
  // M += e; orthogonalise Q; P = M Q.
  for (const Matrix& mx : bk.mats) {
    if (mx.r == 0) continue;
    float* M = gp + mx.offset;
    float* E = e + mx.offset;
    for (int64_t i = 0; i < mx.numel; ++i) M[i] += E[i];
    float* Q = q + mx.q_offset;
    float* P = p + mx.p_offset;
    orthogonalize_columns(Q, mx.m, mx.r);
    for (int64_t i = 0; i < mx.n; ++i)
      for (int64_t c = 0; c < mx.r; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < mx.m; ++j) acc += double(M[i * mx.m + j]) * Q[j * mx.r + c];
        P[i * mx.r + c] = float(acc);
      }
  }
  ctx.allreduce(comm, bk.p, ReduceOp::sum);  // orthogonalised next: no need to average
  // Orthogonalise P; Q = M^T P.
  for (const Matrix& mx : bk.mats) {
    if (mx.r == 0) continue;
    const float* M = gp + mx.offset;
    float* P = p + mx.p_offset;
    float* Q = q + mx.q_offset;
    orthogonalize_columns(P, mx.n, mx.r);
    for (int64_t j = 0; j < mx.m; ++j)
      for (int64_t c = 0; c < mx.r; ++c) {
        double acc = 0;
        for (int64_t i = 0; i < mx.n; ++i) acc += double(M[i * mx.m + j]) * P[i * mx.r + c];
        Q[j * mx.r + c] = float(acc);
      }
  }
  ctx.allreduce(comm, bk.q, ReduceOp::average);  // Q = (sum_k M_k^T P) / world
  // A = P Q^T (the average's approximation); e = M - A; the result A, or world A for a sum.
  const float scale = average ? 1.0f : static_cast<float>(comm.size());
  for (const Matrix& mx : bk.mats) {
    if (mx.r == 0) continue;
    float* M = gp + mx.offset;
    float* E = e + mx.offset;
    const float* P = p + mx.p_offset;
    const float* Q = q + mx.q_offset;
    for (int64_t i = 0; i < mx.n; ++i)
      for (int64_t j = 0; j < mx.m; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < mx.r; ++c) acc += double(P[i * mx.r + c]) * Q[j * mx.r + c];
        const float a = float(acc);
        E[i * mx.m + j] = M[i * mx.m + j] - a;
        M[i * mx.m + j] = a * scale;
      }
  }
}

void PowerSgdCompressor::save_state(StateDict& out) const {
  out.put_string("compress", "powersgd");
  out.put_int("step", step_);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bk = buckets_[b];
    if (bk.p_numel == 0) continue;  // never compressed: nothing to keep
    out.put_tensor(fmt::format("b{}.residual", b), bk.residual);
    out.put_tensor(fmt::format("b{}.q", b), bk.q);
    out.put_bool(fmt::format("b{}.q_ready", b), bk.q_ready);
  }
}

void PowerSgdCompressor::load_state(const StateDict& in) {
  const std::string& kind = in.get_string("compress");
  DPLAB_CHECK(kind == "powersgd", "{}: gradient compression state is '{}', this run uses powersgd",
              in.origin(), kind);
  step_ = state_int(in, "powersgd", "step", 0, INT64_MAX);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bk = buckets_[b];
    if (bk.p_numel == 0) continue;
    restore_tensor(in, "powersgd", fmt::format("b{}.residual", b), bk.residual);
    restore_tensor(in, "powersgd", fmt::format("b{}.q", b), bk.q);
    bk.q_ready = in.get_bool(fmt::format("b{}.q_ready", b));
  }
}

}  // namespace dplab
