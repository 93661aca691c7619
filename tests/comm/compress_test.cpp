// Gradient compression in GradSync (comm/grad_compress.h): PowerSGD and top-k with error
// feedback, checked against serial computations written here in double precision from every
// rank's gradients (each rank can compute every other rank's: they are a function of the rank),
// plus error-feedback conservation, the bytes CommStats reports, and bitwise save/load.
// The autograd engine is emulated by writing gradients and firing the grad-ready hooks.
#include <gtest/gtest.h>

#include "dplab/comm/algorithms/crossover.h"
#include "dplab/core/usage_error.h"

#include <algorithm>
#include <cmath>

#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/powersgd.h"
#include "dplab/comm/topk_compress.h"
#include "dplab/comm/topology.h"

namespace dplab {
namespace {

using Mat = std::vector<double>;  // row-major

std::unique_ptr<ParamArena> make_arena(const std::vector<Shape>& shapes) {
  std::vector<NamedTensor> ps;
  for (size_t i = 0; i < shapes.size(); ++i)
    ps.push_back({fmt::format("p{}", i), Tensor::zeros(shapes[i])});
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
}

// Pseudo-random gradient in [-1, 1) of rank r, step t, arena element i (a hash: the matrices are
// of full rank and well conditioned, which the full-rank test needs; smooth functions such as
// sin(a i + b) give rank-2 matrices).
float rand_grad(int r, int t, int64_t i) {
  uint64_t x =
      (uint64_t(r) * 1000003u + uint64_t(t) * 7919u + uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<float>(double(x >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}
// A coarse grid with many ties in |g| (for top-k's tie rule).
float tied_grad(int r, int t, int64_t i) {
  return static_cast<float>(int((i * 7 + r * 3 + t * 5) % 9) - 4) / 4.0f;
}

void backward(ParamArena& arena, int r, int t, float (*f)(int, int, int64_t)) {
  arena.zero_grad();
  for (const auto& seg : arena.segments()) {
    float* p = seg.param.grad().data<float>();
    for (int64_t j = 0; j < seg.numel; ++j) p[j] = f(r, t, seg.offset + j);
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
}

// The arena indices that belong to a tensor (the arena pads segments for alignment; the padding
// travels with a plain bucket but holds no gradient).
std::vector<int64_t> elements(const ParamArena& arena) {
  std::vector<int64_t> v;
  for (const auto& seg : arena.segments())
    for (int64_t j = 0; j < seg.numel; ++j) v.push_back(seg.offset + j);
  return v;
}

std::shared_ptr<Topology> world_topo() {
  return std::make_shared<Topology>(Topology::from_options(Options{}));
}

GradSyncOptions psgd_opts(int64_t rank, int64_t start, double min_rate) {
  GradSyncOptions o;
  o.bucket_cap_mb = 25;  // one bucket
  o.compress.kind = "powersgd";
  o.compress.rank = rank;
  o.compress.start_step = start;
  o.compress.min_compression_rate = min_rate;
  o.compress.seed = 7;
  return o;
}

// Every rank's copy of `t` (f32), rank order.
std::vector<std::vector<float>> gather(Communicator& c, const Tensor& t) {
  Tensor all = Tensor::empty({c.size() * t.numel()});
  c.allgather(t, all);
  auto v = all.to_vector();
  std::vector<std::vector<float>> out(c.size());
  for (int r = 0; r < c.size(); ++r)
    out[r].assign(v.begin() + r * t.numel(), v.begin() + (r + 1) * t.numel());
  return out;
}

// Classical Gram-Schmidt on the columns of a rows x r matrix, double (the test's own).
void gram_schmidt(Mat& x, int64_t rows, int64_t r) {
  for (int64_t c = 0; c < r; ++c) {
    for (int64_t c0 = 0; c0 < c; ++c0) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += x[i * r + c0] * x[i * r + c];
      for (int64_t i = 0; i < rows; ++i) x[i * r + c] -= dot * x[i * r + c0];
    }
    double n = 0;
    for (int64_t i = 0; i < rows; ++i) n += x[i * r + c] * x[i * r + c];
    n = std::sqrt(n);
    for (int64_t i = 0; i < rows; ++i) x[i * r + c] /= n;
  }
}

// Full rank (r = min(n, m)): P spans the column space of sum_k M_k (n >= m: P = M_sum Q with Q
// invertible; n < m: P is a square orthogonal matrix), so P P^T M_sum / W = M_sum / W exactly in
// real arithmetic. In f32 the error is a few ulps times the condition number of the small
// well-conditioned random matrices used here: 1e-4 relative to the largest entry is ample,
// while a rank-deficient or wrong approximation is off by O(1).
TEST(PowerSgd, FullRankEqualsAllreduce) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto arena = make_arena({{6, 4}, {3, 5}, {7}, {2, 3, 2}});
  GradSync sync(*arena, topo->world_ptr(), psgd_opts(8, 0, 0.0));
  auto* ps = dynamic_cast<PowerSgdCompressor*>(sync.compressor());
  ASSERT_NE(ps, nullptr);
  const auto& mats = ps->matrices(0);
  ASSERT_EQ(mats.size(), 4u);
  EXPECT_EQ(mats[0].r, 4);
  EXPECT_EQ(mats[1].r, 3);
  EXPECT_EQ(mats[2].r, 0);  // 1-D: uncompressed
  EXPECT_EQ(mats[3].r, 2);  // 2 x 6
  for (int t = 0; t < 3; ++t) {
    backward(*arena, R, t, rand_grad);
    sync.finish();
    auto g = arena->grads().to_vector();
    double maxabs = 0, maxerr = 0, maxres = 0;
    for (int64_t i : elements(*arena)) {
      double avg = 0;
      for (int r = 0; r < W; ++r) avg += rand_grad(r, t, i);
      avg /= W;
      maxabs = std::max(maxabs, std::abs(avg));
      maxerr = std::max(maxerr, std::abs(g[i] - avg));
    }
    for (float e : ps->residual(0).to_vector()) maxres = std::max(maxres, double(std::abs(e)));
    EXPECT_LT(maxerr, 1e-4 * maxabs) << "step " << t;
    // The residual is M_k - average: at full rank, each rank's deviation from the mean,
    // accumulated over the steps (e_t = sum over s <= t of G_s - mean G_s, as the ranks'
    // residuals average to 0): under 2 per step for entries in [-1, 1).
    EXPECT_LT(maxres, 2.0 * (t + 1) + 1e-3) << "step " << t;
  }
}

// Conservation: with e_0 = 0, sum over steps of W * A_t plus sum over ranks of e_T equals the sum
// over steps and ranks of the gradients (each step: sum_k e_k' = sum_k (G_k + e_k) - W A).
// The f32 rounding of T steps of matrices of O(1) entries stays far below 1e-4.
TEST(PowerSgd, ErrorFeedbackConservesTheGradient) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto arena = make_arena({{8, 6}, {5}, {10, 4}});
  GradSync sync(*arena, topo->world_ptr(), psgd_opts(1, 0, 2.0));
  auto* ps = dynamic_cast<PowerSgdCompressor*>(sync.compressor());
  const int64_t n = arena->numel();
  std::vector<double> sent(n, 0.0), truth(n, 0.0);
  const int T = 4;
  for (int t = 0; t < T; ++t) {
    backward(*arena, R, t, rand_grad);
    sync.finish();
    auto g = arena->grads().to_vector();
    for (int64_t i : elements(*arena)) {
      sent[i] += W * double(g[i]);
      for (int r = 0; r < W; ++r) truth[i] += rand_grad(r, t, i);
    }
  }
  auto res = gather(topo->world(), ps->residual(0));
  double maxerr = 0, maxres = 0;
  for (int64_t i : elements(*arena)) {
    double total = sent[i];
    for (int r = 0; r < W; ++r) {
      total += res[r][i];
      maxres = std::max(maxres, double(std::abs(res[r][i])));
    }
    maxerr = std::max(maxerr, std::abs(total - truth[i]));
  }
  EXPECT_LT(maxerr, 1e-4 * T * W);
  EXPECT_GT(maxres, 1e-2) << "rank 1 of a rank-6 matrix leaves a residual";
  // The 1-D tensor (elements 48..52) is averaged exactly and keeps no residual.
  const auto& seg1 = arena->segments()[1];
  for (int64_t j = 0; j < seg1.numel; ++j) EXPECT_EQ(res[R][seg1.offset + j], 0.0f);
}

// One warm-started step against a serial computation in double: before step 2 the test reads Q
// (kept from step 1) and every rank's residual, then computes M_k = G_k + e_k, Q = orth(Q),
// P = orth(sum_k M_k Q), Q' = sum_k M_k^T P / W, A = P Q'^T, e_k' = M_k - A.
TEST(PowerSgd, WarmStepMatchesSerialDouble) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto arena = make_arena({{9, 7}, {4}});
  const int64_t n = 9, m = 7, r = 2;
  GradSync sync(*arena, topo->world_ptr(), psgd_opts(r, 0, 0.0));
  auto* ps = dynamic_cast<PowerSgdCompressor*>(sync.compressor());
  backward(*arena, R, 0, rand_grad);
  sync.finish();
  auto qv = ps->q(0).to_vector();
  auto res = gather(topo->world(), ps->residual(0));
  ASSERT_EQ(int64_t(qv.size()), m * r);
  Mat Q(qv.begin(), qv.end());
  gram_schmidt(Q, m, r);
  std::vector<Mat> M(W, Mat(n * m));
  for (int k = 0; k < W; ++k)
    for (int64_t i = 0; i < n * m; ++i) M[k][i] = double(rand_grad(k, 1, i)) + res[k][i];
  Mat P(n * r, 0.0);
  for (int k = 0; k < W; ++k)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < r; ++c)
        for (int64_t j = 0; j < m; ++j) P[i * r + c] += M[k][i * m + j] * Q[j * r + c];
  gram_schmidt(P, n, r);
  Mat Q2(m * r, 0.0);
  for (int k = 0; k < W; ++k)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t c = 0; c < r; ++c)
        for (int64_t i = 0; i < n; ++i) Q2[j * r + c] += M[k][i * m + j] * P[i * r + c] / W;
  backward(*arena, R, 1, rand_grad);
  sync.finish();
  auto g = arena->grads().to_vector();
  auto e = ps->residual(0).to_vector();
  double maxerr = 0, maxres = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double a = 0;
      for (int64_t c = 0; c < r; ++c) a += P[i * r + c] * Q2[j * r + c];
      maxerr = std::max(maxerr, std::abs(g[i * m + j] - a));
      maxres = std::max(maxres, std::abs(e[i * m + j] - (M[R][i * m + j] - a)));
    }
  // f32 against double on O(1) entries, a handful of dot products of length <= 9 * W.
  EXPECT_LT(maxerr, 2e-5);
  EXPECT_LT(maxres, 2e-5);
  // The 1-D tensor: the plain average.
  const int64_t o1 = arena->segments()[1].offset;
  for (int64_t i = o1; i < o1 + 4; ++i) {
    double avg = 0;
    for (int k = 0; k < W; ++k) avg += rand_grad(k, 1, i);
    EXPECT_NEAR(g[i], avg / W, 1e-6);
  }
}

// start_step plain steps (exact average, no residual, numel * 4 bytes), then compressed steps
// whose bytes are the uncompressed part plus P and Q: here {6, 4} at rank 1 is worth it
// (20 * 2 < 24), {3, 5} is not (16 * 2 >= 15), {5} is 1-D.
TEST(PowerSgd, StartStepAndBytes) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto arena = make_arena({{6, 4}, {3, 5}, {5}});
  GradSync sync(*arena, topo->world_ptr(), psgd_opts(1, 2, 2.0));
  auto* ps = dynamic_cast<PowerSgdCompressor*>(sync.compressor());
  EXPECT_EQ(ps->matrices(0)[0].r, 1);
  EXPECT_EQ(ps->matrices(0)[1].r, 0);
  for (int t = 0; t < 3; ++t) {
    backward(*arena, R, t, rand_grad);
    sync.finish();
    CommStats s = sync.take_stats();
    if (t < 2) {
      // The bucket's range, with the arena's alignment padding: 53 elements.
      EXPECT_EQ(s.bytes_sent, double(sync.buckets()[0].numel()) * 4) << t;
      EXPECT_EQ(s.allreduces, 1) << t;
      EXPECT_DOUBLE_EQ(s.wire_bytes,  // ring allreduce
                       2.0 * (W - 1) / W * double(sync.buckets()[0].numel()) * 4)
          << t;
      auto g = arena->grads().to_vector();
      for (int64_t i : elements(*arena)) {
        double avg = 0;
        for (int k = 0; k < W; ++k) avg += rand_grad(k, t, i);
        EXPECT_NEAR(g[i], avg / W, 1e-6);
      }
      for (float e : ps->residual(0).to_vector()) EXPECT_EQ(e, 0.0f);
    } else {
      EXPECT_EQ(s.bytes_sent, (15.0 + 5.0 + 6.0 + 4.0) * 4) << t;
      EXPECT_EQ(s.allreduces, 3) << t;
      EXPECT_DOUBLE_EQ(s.wire_bytes, 2.0 * (W - 1) / W * (15.0 + 5.0 + 6.0 + 4.0) * 4) << t;
    }
  }
  EXPECT_EQ(ps->step(), 3);
}

// Top-k per bucket (two buckets: per tensor with cap 0) against a serial computation of every
// rank's selection, on gradients with many ties in |g| (ties go to the lower index).
TEST(TopK, PayloadResidualAndResultMatchSerial) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto arena = make_arena({{4, 5}, {13}});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  o.compress.kind = "topk";
  o.compress.ratio = 0.2;  // k = 4 of 20, 2 of 13
  GradSync sync(*arena, topo->world_ptr(), o);
  auto* tk = dynamic_cast<TopKCompressor*>(sync.compressor());
  ASSERT_EQ(sync.buckets().size(), 2u);
  EXPECT_EQ(tk->k(0), 4);
  EXPECT_EQ(tk->k(1), 2);
  const int64_t N = arena->numel();
  std::vector<std::vector<double>> res(W, std::vector<double>(N, 0.0));  // serial residuals
  for (int t = 0; t < 3; ++t) {
    backward(*arena, R, t, tied_grad);
    sync.finish();
    CommStats s = sync.take_stats();
    EXPECT_EQ(s.bytes_sent, (4 + 2) * 8.0);
    EXPECT_EQ(s.collectives, 4);
    // Each allgather of b bytes puts (W - 1) b on this rank's links (ring, comm/wire_bytes.h).
    EXPECT_DOUBLE_EQ(s.wire_bytes, (W - 1) * (4 + 2) * 8.0);
    std::vector<double> sum(N, 0.0);
    std::vector<std::vector<int>> sel(W);  // rank R's selection, bucket by bucket
    for (int k = 0; k < W; ++k) {
      for (size_t b = 0; b < 2; ++b) {
        const int64_t lo = sync.buckets()[b].begin, hi = sync.buckets()[b].end;
        const int64_t kk = b == 0 ? 4 : 2;
        std::vector<double> gp(N);
        for (int64_t i = lo; i < hi; ++i) gp[i] = tied_grad(k, t, i) + res[k][i];
        std::vector<int> chosen;
        for (int64_t c = 0; c < kk; ++c) {  // repeated arg-max, first (lowest) index on ties
          int64_t best = -1;
          for (int64_t i = lo; i < hi; ++i)
            if (std::find(chosen.begin(), chosen.end(), int(i)) == chosen.end() &&
                (best < 0 || std::abs(gp[i]) > std::abs(gp[best])))
              best = i;
          chosen.push_back(int(best));
        }
        std::sort(chosen.begin(), chosen.end());
        for (int64_t i = lo; i < hi; ++i) res[k][i] = gp[i];
        for (int i : chosen) sum[i] += gp[i], res[k][i] = 0;
        if (k == R) {
          Tensor idx_t = tk->sent_indices(int(b));
          const int32_t* idx = idx_t.data<int32_t>();
          auto val = tk->sent_values(int(b)).to_vector();
          for (int64_t c = 0; c < kk; ++c) {
            EXPECT_EQ(int64_t(idx[c]), chosen[c] - lo) << "step " << t << " bucket " << b;
            EXPECT_EQ(val[c], float(gp[chosen[c]])) << "step " << t << " bucket " << b;
          }
        }
      }
    }
    auto g = arena->grads().to_vector();
    std::vector<float> e0 = tk->residual(0).to_vector(), e1 = tk->residual(1).to_vector();
    for (int64_t i : elements(*arena)) {
      EXPECT_NEAR(g[i], sum[i] / W, 1e-6) << "step " << t << " elem " << i;
      const int64_t b1 = sync.buckets()[1].begin;
      const float e = i < b1 ? e0[i] : e1[i - b1];
      EXPECT_EQ(e, float(res[R][i])) << "step " << t << " elem " << i;  // quarters: exact
    }
  }
}

// Save after two steps, continue two more; a fresh GradSync loading the state must reproduce
// the last two steps bitwise (residuals, Q and the step count all travel).
void check_resume(const GradSyncOptions& o) {
  const int R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  auto a1 = make_arena({{6, 5}, {4}, {8, 3}});
  auto a2 = make_arena({{6, 5}, {4}, {8, 3}});
  GradSync s1(*a1, topo->world_ptr(), o);
  for (int t = 0; t < 2; ++t) backward(*a1, R, t, rand_grad), s1.finish();
  StateDict saved, st;  // put_tensor keeps a handle: copy, as writing a checkpoint file does
  s1.save_state(saved);
  std::vector<NamedTensor> copies;
  for (const auto& nt : saved.tensors()) copies.push_back({nt.name, nt.tensor.clone()});
  st.assign(copies, saved.values());
  std::vector<std::vector<float>> ref;
  for (int t = 2; t < 4; ++t) {
    backward(*a1, R, t, rand_grad), s1.finish();
    ref.push_back(a1->grads().to_vector());
  }
  GradSync s2(*a2, topo->world_ptr(), o);
  s2.load_state(st);
  for (int t = 2; t < 4; ++t) {
    backward(*a2, R, t, rand_grad), s2.finish();
    EXPECT_EQ(a2->grads().to_vector(), ref[size_t(t - 2)]) << o.compress.kind << " step " << t;
  }
  // Without the state the trajectory differs (the test can fail).
  auto a3 = make_arena({{6, 5}, {4}, {8, 3}});  // a2 still fires s2's hooks
  GradSync s3(*a3, topo->world_ptr(), o);
  backward(*a3, R, 2, rand_grad), s3.finish();
  EXPECT_NE(a3->grads().to_vector(), ref[0]) << o.compress.kind;
}

TEST(Compression, ResumesBitwise) {
  check_resume(psgd_opts(1, 1, 0.0));
  GradSyncOptions o;
  o.compress.kind = "topk";
  o.compress.ratio = 0.1;
  check_resume(o);
}

// Sum mode (set_average(false), as hybrid and crossover use it): full-rank PowerSGD and top-k
// with ratio 1 (everything sent) both leave the plain sum over ranks, and top-k no residual.
TEST(Compression, SumModeAtFullRankAndFullRatio) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = world_topo();
  GradSyncOptions tk;
  tk.compress.kind = "topk";
  tk.compress.ratio = 1.0;
  for (const GradSyncOptions& o : {psgd_opts(8, 0, 0.0), tk}) {
    auto arena = make_arena({{5, 4}, {3}, {3, 6}});
    GradSync sync(*arena, topo->world_ptr(), o);
    sync.set_average(false);
    for (int t = 0; t < 2; ++t) {
      backward(*arena, R, t, rand_grad);
      sync.finish();
      auto g = arena->grads().to_vector();
      for (int64_t i : elements(*arena)) {
        double sum = 0;
        for (int r = 0; r < W; ++r) sum += rand_grad(r, t, i);
        // Full rank: f32 Gram-Schmidt on well-conditioned random matrices (as above).
        EXPECT_NEAR(g[i], sum, 1e-4 * W) << o.compress.kind << " step " << t << " elem " << i;
      }
    }
    if (o.compress.kind == "topk") {
      for (float e : dynamic_cast<TopKCompressor*>(sync.compressor())->residual(0).to_vector())
        EXPECT_EQ(e, 0.0f);
    }
  }
}

TEST(Compression, OptionsAndErrors) {
  Options opt;
  opt.set("hybrid.compress", "powersgd");
  opt.set("hybrid.powersgd.rank", "3");
  opt.set("seed", "11");
  auto o = GradSyncOptions::from_options(opt, "hybrid.");
  EXPECT_EQ(o.compress.kind, "powersgd");
  EXPECT_EQ(o.compress.rank, 3);
  EXPECT_EQ(o.compress.start_step, 1000);
  EXPECT_EQ(o.compress.seed, 11u);
  opt.set("hybrid.compress", "lowrank");
  EXPECT_THROW(GradSyncOptions::from_options(opt, "hybrid."), Error);
  opt.set("hybrid.compress", "topk");
  opt.set("hybrid.topk.ratio", "0");
  EXPECT_THROW(GradSyncOptions::from_options(opt, "hybrid."), Error);
  auto topo = world_topo();
  auto arena = make_arena({{4, 4}});
  GradSyncOptions w = psgd_opts(1, 0, 2);
  w.wire = DType::bf16;
  EXPECT_THROW({ GradSync bad(*arena, topo->world_ptr(), w); }, Error);
}

// Flat Crossover averages no gradients: crossover.sync.compress is refused there, not ignored;
// with the group mode it is read.
TEST(Compress, CrossoverRefusesCompressionWithoutGroupMode) {
  Options o;
  o.set("crossover.sync.compress", "topk");
  try {
    CrossoverOptions::from_options(o);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("crossover.sync.compress = topk"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("crossover.hierarchical = true"), std::string::npos)
        << e.what();
  }
  o.set("crossover.hierarchical", "true");
  EXPECT_EQ(CrossoverOptions::from_options(o).sync.compress.kind, "topk");
}

// ---- Hierarchical mode: nodes of 2 ranks (1 on odd world sizes) -----------------------------

std::shared_ptr<Topology> node_topo(int W) {
  Options o;
  o.set("ranks_per_node", W % 2 == 0 ? "2" : "1");
  return std::make_shared<Topology>(Topology::from_options(o));
}

// Top-k in the hierarchical mode against a serial computation: each node is one worker whose
// gradient is the exact sum of its ranks' (quarters: exact in f32), with its own residual; the
// nodes' sparse payloads are summed and divided by the world size; every rank of every node
// gets the result. Bytes (the meter's rule, comm/meter.h: a collective's payload counts for
// every participant): every rank's bucket in the node reduce and in the broadcast, and the
// node's first rank's payloads (8 k per bucket).
TEST(TopK, HierarchicalMatchesSerialPerNode) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = node_topo(W);
  const int G = topo->ranks_per_node(), N = W / G;
  auto arena = make_arena({{4, 5}, {13}});
  GradSyncOptions o;
  o.bucket_cap_mb = 0;
  o.hierarchical = true;
  o.compress.kind = "topk";
  o.compress.ratio = 0.2;  // k = 4 of 20, 2 of 13
  GradSync sync(*arena, topo->world_ptr(), o, topo->node_ptr(), topo->cross_ptr());
  auto* tk = dynamic_cast<TopKCompressor*>(sync.compressor());
  ASSERT_NE(tk, nullptr);
  ASSERT_EQ(sync.buckets().size(), 2u);
  const int64_t M = arena->numel();
  std::vector<std::vector<double>> res(static_cast<size_t>(N),
                                       std::vector<double>(static_cast<size_t>(M), 0.0));
  for (int t = 0; t < 3; ++t) {
    backward(*arena, R, t, tied_grad);
    sync.finish();
    const CommStats st = sync.take_stats();
    double bytes = 0, wire = 0;
    for (size_t b = 0; b < 2; ++b) {
      const double bucket = 4.0 * double(sync.buckets()[b].numel());
      if (G > 1) bytes += 2 * bucket;  // node reduce and broadcast
      if (topo->local_rank() == 0) bytes += 8.0 * tk->k(int(b));
      // Wire: reduce and broadcast (G - 1) / G of the bucket each, the allgathers (N - 1) b.
      wire += 2.0 * (G - 1) / G * bucket;
      if (topo->local_rank() == 0) wire += (N - 1) * 8.0 * tk->k(int(b));
    }
    EXPECT_EQ(st.bytes_sent, bytes) << "step " << t;
    EXPECT_DOUBLE_EQ(st.wire_bytes, wire) << "step " << t;
    std::vector<double> sum(static_cast<size_t>(M), 0.0);
    for (int n = 0; n < N; ++n) {
      for (size_t b = 0; b < 2; ++b) {
        const int64_t lo = sync.buckets()[b].begin, hi = sync.buckets()[b].end;
        const int64_t kk = b == 0 ? 4 : 2;
        std::vector<double> gp(static_cast<size_t>(M));
        for (int64_t i = lo; i < hi; ++i) {
          double node_sum = 0;
          for (int r = n * G; r < (n + 1) * G; ++r) node_sum += tied_grad(r, t, i);
          gp[size_t(i)] = node_sum + res[size_t(n)][size_t(i)];
        }
        std::vector<int> chosen;
        for (int64_t c = 0; c < kk; ++c) {  // repeated arg-max, lowest index on ties
          int64_t best = -1;
          for (int64_t i = lo; i < hi; ++i)
            if (std::find(chosen.begin(), chosen.end(), int(i)) == chosen.end() &&
                (best < 0 || std::abs(gp[size_t(i)]) > std::abs(gp[size_t(best)])))
              best = i;
          chosen.push_back(int(best));
        }
        for (int64_t i = lo; i < hi; ++i) res[size_t(n)][size_t(i)] = gp[size_t(i)];
        for (int i : chosen) sum[size_t(i)] += gp[size_t(i)], res[size_t(n)][size_t(i)] = 0;
      }
    }
    const auto g = arena->grads().to_vector();
    for (int64_t i : elements(*arena))
      EXPECT_NEAR(g[size_t(i)], sum[size_t(i)] / W, 1e-6) << "step " << t << " elem " << i;
    if (topo->local_rank() == 0) {
      const int64_t b1 = sync.buckets()[1].begin;
      const auto e0 = tk->residual(0).to_vector(), e1 = tk->residual(1).to_vector();
      for (int64_t i : elements(*arena)) {
        const float e = i < b1 ? e0[size_t(i)] : e1[size_t(i - b1)];
        EXPECT_EQ(e, float(res[size_t(topo->node_id())][size_t(i)])) << "step " << t;
      }
    }
  }
  // The serial reference really sparsified: some element kept a residual.
  double kept = 0;
  for (const auto& r : res)
    for (double v : r) kept = std::max(kept, std::abs(v));
  EXPECT_GT(kept, 0.0);
}

// PowerSGD at full rank in the hierarchical mode: the node sums' average, exactly up to f32
// rounding (as FullRankEqualsAllreduce in the flat mode), on every rank.
TEST(PowerSgd, HierarchicalFullRankEqualsAllreduce) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto topo = node_topo(W);
  auto arena = make_arena({{6, 4}, {3, 5}, {7}, {2, 3, 2}});
  GradSyncOptions o = psgd_opts(8, 0, 0.0);
  o.hierarchical = true;
  GradSync sync(*arena, topo->world_ptr(), o, topo->node_ptr(), topo->cross_ptr());
  for (int t = 0; t < 3; ++t) {
    backward(*arena, R, t, rand_grad);
    sync.finish();
    auto g = arena->grads().to_vector();
    double maxabs = 0, maxerr = 0;
    for (int64_t i : elements(*arena)) {
      double avg = 0;
      for (int r = 0; r < W; ++r) avg += rand_grad(r, t, i);
      avg /= W;
      maxabs = std::max(maxabs, std::abs(avg));
      maxerr = std::max(maxerr, std::abs(g[size_t(i)] - avg));
    }
    EXPECT_LT(maxerr, 1e-4 * maxabs) << "step " << t;
  }
  // At rank 1 the same bucket is off by O(1): the test can tell.
  GradSyncOptions low = psgd_opts(1, 0, 0.0);
  low.hierarchical = true;
  auto arena1 = make_arena({{6, 4}});
  GradSync sync1(*arena1, topo->world_ptr(), low, topo->node_ptr(), topo->cross_ptr());
  backward(*arena1, R, 0, rand_grad);
  sync1.finish();
  if (W > 1) {
    auto g = arena1->grads().to_vector();
    double maxerr = 0;
    for (int64_t i : elements(*arena1)) {
      double avg = 0;
      for (int r = 0; r < W; ++r) avg += rand_grad(r, 0, i);
      maxerr = std::max(maxerr, std::abs(g[size_t(i)] - avg / W));
    }
    EXPECT_GT(maxerr, 1e-2);
  }
}

}  // namespace
}  // namespace dplab
