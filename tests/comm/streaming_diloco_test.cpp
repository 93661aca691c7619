// Streaming DiLoCo (comm/algorithms/streaming_diloco.h): its fragment schedule by hand, then the
// strategy on 2 and 4 ranks against a serial simulation of the N workers (outer_step_harness.h)
// with the fragments' outer steps computed in double, in f32, bf16, int8 and int4 on the wire.
// Tolerance as in outer_step_test.cpp: 1e-5 relative (f32 rounding of the strategy's outer
// step against the double reference).
#include <gtest/gtest.h>

#include "outer_step_harness.h"

namespace dplab {
namespace {

using namespace outer_step;

// ---- Streaming DiLoCo -------------------------------------------------------------------------

// The staggered schedule by hand: H = 8, P = 2 (offsets 4 and 8), τ = 2; and H = 10, P = 3
// (offsets 3, 6, 10).
TEST(StreamingDiLoCo, FragmentScheduleIsStaggered) {
  StreamingSchedule sc{8, 2, 2};
  sc.check();
  std::vector<int64_t> sends, applies;
  for (int64_t s = 0; s <= 20; ++s) {
    sends.push_back(sc.sends_after(s));
    applies.push_back(sc.applies_after(s));
  }
  //                               s: 0   1   2   3  4   5   6   7  8   9  10  11 12  13 14  15 16
  //                               17 18  19 20
  EXPECT_EQ(sends, (std::vector<int64_t>{-1, -1, -1, -1, 0,  -1, -1, -1, 1,  -1, -1,
                                         -1, 0,  -1, -1, -1, 1,  -1, -1, -1, 0}));
  EXPECT_EQ(applies, (std::vector<int64_t>{-1, -1, -1, -1, -1, -1, 0,  -1, -1, -1, 1,
                                           -1, -1, -1, 0,  -1, -1, -1, 1,  -1, -1}));
  StreamingSchedule three{10, 3, 0};
  three.check();
  std::vector<int64_t> got;
  for (int64_t s = 1; s <= 13; ++s) got.push_back(three.sends_after(s));
  EXPECT_EQ(got, (std::vector<int64_t>{-1, -1, 0, -1, -1, 1, -1, -1, -1, 2, -1, -1, 0}));
  // τ must stay below ⌊H/P⌋, P within 1 .. H.
  EXPECT_THROW((StreamingSchedule{8, 2, 4}.check()), Error);
  EXPECT_THROW((StreamingSchedule{8, 9, 0}.check()), Error);
  EXPECT_NO_THROW((StreamingSchedule{8, 2, 3}.check()));
}

// Fragments cover the arena, in order, cut at tensor boundaries, about equal in size.
TEST(StreamingDiLoCo, FragmentsAreContiguousTensorRanges) {
  Replica r(1);
  const auto& segs = r.arena->segments();
  std::set<int64_t> bounds = {r.arena->numel()};
  for (const auto& sg : segs) bounds.insert(sg.offset);
  for (int64_t P : {int64_t(1), int64_t(2), int64_t(3)}) {
    const auto f = arena_fragments(*r.arena, P);
    ASSERT_EQ(int64_t(f.size()), P);
    EXPECT_EQ(f.front().first, 0);
    EXPECT_EQ(f.back().second, r.arena->numel());
    for (size_t i = 0; i < f.size(); ++i) {
      EXPECT_LT(f[i].first, f[i].second) << P;
      EXPECT_TRUE(bounds.count(f[i].second)) << P;
      if (i > 0) {
        EXPECT_EQ(f[i].first, f[i - 1].second) << P;
      }
    }
  }
  EXPECT_THROW(arena_fragments(*r.arena, int64_t(segs.size()) + 1), Error);
}

// fragment_pattern = strided by hand: the test model (mnist_cnn) has three blocks, its top-level
// modules cnn1 (conv 1->16 k5: 400 + 16), cnn2 (conv 16->32 k5: 12800 + 32) and fc1 (512 -> 10:
// 5120 + 10), in arena order (the reverse of forward, each tensor starting at a multiple of 16
// elements): fc1.bias [0, 10), fc1.weight [16, 5136), cnn2.bias [5136, 5168), cnn2.weight
// [5168, 17968), cnn1.bias [17968, 17984), cnn1.weight [17984, 18384). So the blocks are fc1
// [0, 5136), cnn2 [5136, 17968), cnn1 [17968, 18384). P = 2 deals them round-robin: fragment 0 =
// {fc1, cnn1}, two ranges; fragment 1 = {cnn2}. P = 3: one block each; P = 4 is refused (more
// fragments than blocks).
TEST(StreamingDiLoCo, StridedFragmentsDealBlocksRoundRobin) {
  Replica r(1);
  ASSERT_EQ(r.arena->numel(), 18384);
  const auto two = plan_fragments(*r.arena, 2, "strided");
  const Fragment fc1 = {{0, 5136}}, cnn2 = {{5136, 17968}}, cnn1 = {{17968, 18384}};
  EXPECT_EQ(two, (std::vector<Fragment>{{fc1[0], cnn1[0]}, cnn2}));
  EXPECT_EQ(fragment_numel(two[0]), 5552);
  EXPECT_EQ(plan_fragments(*r.arena, 3, "strided"), (std::vector<Fragment>{fc1, cnn2, cnn1}));
  EXPECT_EQ(plan_fragments(*r.arena, 1, "strided"), (std::vector<Fragment>{{{0, 18384}}}));
  EXPECT_THROW(plan_fragments(*r.arena, 4, "strided"), Error);
  // contiguous: one range each, as arena_fragments.
  const auto c = plan_fragments(*r.arena, 2, "contiguous");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], (Fragment{arena_fragments(*r.arena, 2)[0]}));
  Options o;
  o.set("streaming_diloco.fragment_pattern", "interleaved");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
}

// A checkpoint from before fragment_pattern existed (no "fragment_strided") holds contiguous
// fragments: it loads into a contiguous run and a strided run refuses it, naming the option.
TEST(StreamingDiLoCo, OldCheckpointsLoadAsContiguous) {
  const int R = MpiEnv::get().world_rank();
  auto make = [&](const char* pattern, Replica& rep) {
    Options o;
    o.set("streaming_diloco.H", "4");
    o.set("streaming_diloco.fragment_pattern", pattern);
    o.set("comm.timeout_s", "20");
    auto s = std::make_unique<StreamingDiLoCoStrategy>(topology_of(o), o);
    rep.set_up(*s);
    return s;
  };
  Replica ra(11 + uint64_t(R)), rb(11 + uint64_t(R)), rc(11 + uint64_t(R));
  auto a = make("contiguous", ra);
  StateDict saved;
  a->save_state(saved);
  std::map<std::string, std::string> values = saved.values();
  ASSERT_EQ(values.erase("fragment_strided"), 1u);
  StateDict old_format;
  old_format.assign(saved.tensors(), values);
  EXPECT_NO_THROW(make("contiguous", rb)->load_state(old_format));
  try {
    make("strided", rc)->load_state(old_format);
    ADD_FAILURE() << "a contiguous checkpoint was loaded into a strided run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fragment_pattern"), std::string::npos) << e.what();
  }
}

// The elements of a fragment, in the order the strategy packs them.
std::vector<int64_t> elements(const Fragment& f) {
  std::vector<int64_t> out;
  for (const auto& [b, e] : f)
    for (int64_t j = b; j < e; ++j) out.push_back(j);
  return out;
}

// The strategy at H = 4, P = 2, τ = 1, α = 0.5 against the schedule written by hand (fragment
// 0 sends after steps 2, 6, 10, fragment 1 after 4, 8, 12, each applied one step later) and the
// outer step and mixing in double: Δ_p = θ_g[p] − mean θ_i[p] at the send; at the apply
// θ_g[p] ← Nesterov SGD(θ_g[p], Δ_p), θ_i[p] ← θ_g[p] + α (θ_i[p] − θ_g[p]) per replica. At the
// end the pending fragment is applied, then every fragment takes one blocking outer step with
// α = 0. Both fragment patterns: the fragments' elements come from the strategy (their layout
// is checked by hand above).
void check_outer_steps(const char* pattern) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const double lr = 0.7, mu = 0.9, alpha = 0.5;
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.fragments", "2");
  o.set("streaming_diloco.fragment_pattern", pattern);
  o.set("streaming_diloco.fragment_sync_delay", "1");
  o.set("streaming_diloco.fragment_update_alpha", "0.5");
  o.set("comm.timeout_s", "20");
  StreamingDiLoCoStrategy s(topology_of(o), o);
  Replica dist(11 + uint64_t(R));
  dist.set_up(s);
  ASSERT_EQ(s.fragments().size(), 2u);
  const std::vector<std::vector<int64_t>> frags = {elements(s.fragments()[0]),
                                                   elements(s.fragments()[1])};

  std::vector<Replica> reps;
  for (int i = 0; i < N; ++i) reps.emplace_back(11);
  std::vector<double> theta = reps[0].params(), b(theta.size(), 0.0);
  std::vector<int64_t> outer(2, 0);
  std::vector<std::vector<double>> delta(2);
  auto send = [&](int p) {
    const auto avg = mean_params(reps);
    delta[size_t(p)].clear();
    for (int64_t j : frags[size_t(p)])
      delta[size_t(p)].push_back(theta[size_t(j)] - avg[size_t(j)]);
  };
  double mixed_apart = 0;  // how far mixing leaves the local models from θ_g (α > 0 matters)
  auto apply = [&](int p, double a) {
    const auto& js = frags[size_t(p)];
    for (size_t i = 0; i < js.size(); ++i) {
      const int64_t j = js[i];
      const double d = delta[size_t(p)][i];
      b[size_t(j)] = outer[size_t(p)] == 0 ? d : mu * b[size_t(j)] + d;
      theta[size_t(j)] -= lr * (d + mu * b[size_t(j)]);
    }
    ++outer[size_t(p)];
    for (auto& r : reps) {
      std::vector<double> v = r.params();
      for (int64_t j : js) {
        const double t = theta[size_t(j)];
        v[size_t(j)] = t + a * (v[size_t(j)] - t);
        mixed_apart = std::max(mixed_apart, std::fabs(v[size_t(j)] - t));
      }
      r.set_params(v);
    }
  };
  const int64_t epochs = 2, steps = 6;
  int64_t global = 0, pending = -1;
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t k = 0; k < steps; ++k, ++global) {
      StepInfo info{e, k, global, steps, epochs};
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      s.after_step(info);
      for (int i = 0; i < N; ++i) reps[size_t(i)].grad(i, e, k);
      for (auto& r : reps) r.sgd->step();
      const int64_t done = global + 1;
      if (pending >= 0 && done % 2 == 1) {  // one step after the send
        apply(int(pending), alpha);
        pending = -1;
      }
      if (done % 4 == 2) pending = 0;
      if (done % 4 == 0) pending = 1;
      if (done % 2 == 0) send(int(pending));
    }
    s.end_epoch(e, 0.0);
    s.drain();
  }
  s.finish_training();
  ASSERT_EQ(pending, 1);  // sent after step 12, applied by finish_training
  apply(1, alpha);
  for (int p = 0; p < 2; ++p) {
    send(p);
    apply(p, 0.0);
  }
  EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{4, 4}));
  const double d = rel_diff(as_double(dist.arena->params()), reps[size_t(R)].params());
  EXPECT_LT(d, 1e-5) << "rank " << R;
  EXPECT_LT(rel_diff(as_double(s.theta_global()), theta), 1e-5);
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
  if (N > 1) {
    EXPECT_GT(mixed_apart, 0.0);  // α = 0.5 left local progress in the models
  }
  if (R == 0) std::printf("[streaming_diloco %s] %d ranks: rel diff %.3g\n", pattern, N, d);
}

TEST(StreamingDiLoCo, OuterStepsAndMixingMatchTheSerialReference) {
  check_outer_steps("contiguous");
}

TEST(StreamingDiLoCo, StridedFragmentsMatchTheSerialReference) {
  check_outer_steps("strided");
}

// streaming_diloco.round_spans_epochs = false: every epoch's end makes a full sync (the exchange
// in flight applied, then every fragment's blocking outer step with α = 0), so every epoch ends
// with θ_g, the same bytes on every rank, and the schedule starts again. H = 4, P = 2, τ = 1,
// epochs of 6 steps: fragment 0 sends after steps 2 and 6 of each epoch, fragment 1 after step
// 4; per epoch fragment 0 takes 3 outer steps (the apply after step 3, the one sent at 6 applied
// by the full sync, the full sync's own) and fragment 1 two (after step 5, the full sync's).
// Spanning epochs (the default) leaves the local models apart at the epoch's end instead.
TEST(StreamingDiLoCo, FullSyncAtEveryEpochEndUnlessRoundsSpanEpochs) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  for (const bool spans : {false, true}) {
    Options o;
    o.set("streaming_diloco.H", "4");
    o.set("streaming_diloco.fragments", "2");
    o.set("streaming_diloco.fragment_sync_delay", "1");
    o.set("streaming_diloco.round_spans_epochs", spans ? "true" : "false");
    o.set("comm.timeout_s", "20");
    StreamingDiLoCoStrategy s(topology_of(o), o);
    Replica dist(11 + uint64_t(R));
    dist.set_up(s);
    const int64_t epochs = 2, steps = 6;
    int64_t global = 0;
    for (int64_t e = 0; e < epochs; ++e) {
      s.begin_epoch(e);
      for (int64_t k = 0; k < steps; ++k, ++global) {
        StepInfo info{e, k, global, steps, epochs};
        s.plan(info);
        dist.grad(R, e, k);
        s.after_backward(info);
        dist.sgd->step();
        s.after_step(info);
      }
      s.end_epoch(e, 0.0);
      s.drain();
      EXPECT_FALSE(s.consensus_eval([] {}));  // not offered (as before issue #32)
      if (!spans) {
        EXPECT_EQ(s.inner_steps(), 0);  // the schedule starts again
        EXPECT_EQ(s.rounds(), e + 1);
        EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{3 * (e + 1), 2 * (e + 1)}));
        EXPECT_TRUE(same_bytes_everywhere(dist.arena->params())) << "epoch " << e;
        EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global())) << "epoch " << e;
      } else {
        EXPECT_EQ(s.inner_steps(), global);
        EXPECT_EQ(s.rounds(), 0);
        if (N > 1) {
          EXPECT_FALSE(same_bytes_everywhere(dist.arena->params())) << "epoch " << e;
        }
      }
    }
    s.finish_training();
    // Not spanning: the last epoch's end closed the round; spanning: the end of training's full
    // sync (fragment 0 sent at 10 and applied at 11; fragment 1 in flight since 12).
    EXPECT_EQ(s.rounds(), spans ? 1 : 2);
    EXPECT_EQ(s.outer_steps(), spans ? (std::vector<int64_t>{4, 4}) : (std::vector<int64_t>{6, 4}));
    EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
    EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global()));
  }
}

// The wire: bf16 outer gradients cost half the bytes of f32 and are rounded: θ_g moves off the
// f32 run's (so the wire is really used) by at most the bf16 rounding of Δ, 2^-9 of |Δ|, and
// |Δ| (a few local steps) is well below |θ|: under 1e-2 of θ's norm.
TEST(StreamingDiLoCo, Bf16WireHalvesTheBytesAndRoundsTheOuterGradient) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  auto run = [&](const char* wire, CommStats& stats) {
    Options o;
    o.set("streaming_diloco.H", "2");
    o.set("streaming_diloco.fragments", "2");
    o.set("streaming_diloco.fragment_sync_delay", "0");
    o.set("streaming_diloco.wire", wire);
    o.set("comm.timeout_s", "20");
    StreamingDiLoCoStrategy s(topology_of(o), o);
    Replica dist(11 + uint64_t(R));
    dist.set_up(s);
    s.take_stats();  // the setup broadcast
    for (int64_t k = 0; k < 4; ++k) {
      StepInfo info{0, k, k, 4, 1};
      dist.grad(R, 0, k);
      dist.sgd->step();
      s.after_step(info);
    }
    stats = s.take_stats();
    return as_double(s.theta_global());
  };
  CommStats f32, bf16;
  const auto a = run("f32", f32), b = run("bf16", bf16);
  if (N == 1) return;
  EXPECT_EQ(f32.allreduces, 4);  // one fragment after each step
  EXPECT_EQ(bf16.bytes_sent * 2, f32.bytes_sent);
  const double d = rel_diff(b, a);
  EXPECT_GT(d, 0.0);
  EXPECT_LT(d, 1e-2);
  if (R == 0) std::printf("[streaming_diloco bf16] theta rel diff to f32 %.3g\n", d);
}

// ---- Streaming DiLoCo, quantised outer gradients --------------------------------------------

// comm/quantize.h's round trip as its header specifies it, written out here: per block of
// `block` values, s = max |x| / V (f32), x̂ = code(x / s) · s (f32), with code():
//   int (V = 127 or 7): clamp(round(y), −V, V), ties away from zero;
//   float: the nearest multiple of the binade's spacing 2^(max(ilogb |y|, emin) − mantissa bits),
//   ties to even, clamped at V (e4m3: 3 mantissa bits, emin −6, V 448; e2m1: 1, 0, 6).
struct Format {
  const char* name;
  float V;
  int bits;
  int mbits = -1, emin = 0;  // mbits −1: an int format
};
float ref_code_value(const Format& f, float y) {
  if (f.mbits < 0) return std::clamp(std::round(y), -f.V, f.V);
  const float a = std::fabs(y);
  if (a == 0) return 0.f;
  const float step = std::ldexp(1.f, std::max(std::ilogb(a), f.emin) - f.mbits);
  const float v = std::min(std::nearbyint(a / step) * step, f.V);
  return std::signbit(y) ? -v : v;
}
std::vector<float> quantize_dequantize(const std::vector<float>& x, const Format& f,
                                       int64_t block) {
  std::vector<float> out(x.size(), 0.f);
  for (size_t lo = 0; lo < x.size(); lo += size_t(block)) {
    const size_t hi = std::min(x.size(), lo + size_t(block));
    float m = 0;
    for (size_t j = lo; j < hi; ++j) m = std::max(m, std::fabs(x[j]));
    const float s = m / f.V;
    for (size_t j = lo; j < hi; ++j) out[j] = s > 0 ? ref_code_value(f, x[j] / s) * s : 0.f;
  }
  return out;
}
// Bytes of n values packed: one f32 scale per block, then 8 or 4 bits per value.
int64_t packed(int64_t n, int64_t block, bool four_bits) {
  return 4 * ((n + block - 1) / block) + (four_bits ? (n + 1) / 2 : n);
}

// The quantised exchange at H = 4, P = 2, τ = 1, α = 0.5, outer SGD with lr 1 and no momentum
// (θ_g[p] ← θ_g[p] − Δ_p, so θ_g shows Δ directly). Before every inner step's after_step the
// test gathers every rank's local model; at each send (steps 2, 6, 10: fragment 0; 4, 8, 12:
// fragment 1) it computes the exchange serially, as the header specifies it: δ_r = θ_g[p] −
// θ_r[p] per rank, cut into W shards of L = ⌈n/W⌉ (zero-padded); each rank's shard quantised and
// dequantised, the W of them added in f32 in rank order and divided by W, the mean quantised
// and dequantised again: Δ_p. One step later θ_g[p] must equal its own θ_g[p] − Δ_p (the inputs
// are bitwise the strategy's, so only the order of f32 operations could differ: 1e-6 of the
// largest |Δ| over V). Δ must differ from the exact mean by more than 100x that tolerance (the
// values really went through the quantiser) and, for int formats, by at most the mean of the
// ranks' half steps plus the mean's own half step. Bytes per send: W − 1 messages of the packed
// shard (payload and wire), and an allgather of one packed shard (payload S, wire (W − 1) S).
void check_quantized(const Format& f) {
  const int N = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  const int64_t block = 64;
  const bool four_bits = f.bits == 4;
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.fragments", "2");
  o.set("streaming_diloco.fragment_sync_delay", "1");
  o.set("streaming_diloco.fragment_update_alpha", "0.5");
  o.set("streaming_diloco.outer_lr", "1");
  o.set("streaming_diloco.outer_momentum", "0");
  o.set("streaming_diloco.quantize", f.name);
  o.set("streaming_diloco.quantize_block", std::to_string(block));
  o.set("comm.timeout_s", "20");
  StreamingDiLoCoStrategy s(topology_of(o), o);
  Replica dist(11 + uint64_t(R));
  dist.set_up(s);
  s.take_stats();  // the setup broadcast
  ASSERT_EQ(s.fragments().size(), 2u);
  std::vector<std::pair<int64_t, int64_t>> frags;
  for (const auto& fr : s.fragments()) {
    ASSERT_EQ(fr.size(), 1u);  // contiguous
    frags.push_back(fr[0]);
  }
  const int64_t n = dist.arena->numel();
  std::vector<float> theta = dist.arena->params().to_vector();  // θ_g(0): rank 0's model
  auto world = mpi_world();
  std::vector<std::vector<float>> delta(2);
  double quant_apart = 0, exact_tol = 0;  // max |Δ − exact mean| and the tolerance below
  int64_t compared = 0;
  double payload = 0, wire = 0;
  auto bound = [&](const std::vector<float>& x, size_t j) {  // half a step of x's block at j
    const size_t lo = j / size_t(block) * size_t(block),
                 hi = std::min(x.size(), lo + size_t(block));
    float m = 0;
    for (size_t i = lo; i < hi; ++i) m = std::max(m, std::fabs(x[i]));
    return m / f.V / 2 + std::ldexp(double(m), -22);
  };
  auto send = [&](int p, const std::vector<float>& all) {
    const int64_t lo = frags[size_t(p)].first, len = frags[size_t(p)].second - lo;
    const int64_t L = (len + N - 1) / N;
    std::vector<float> out(size_t(len), 0.f);
    std::vector<double> exact(size_t(len), 0.0), err_bound(size_t(len), 0.0);
    for (int r = 0; r < N; ++r) {  // shard r
      std::vector<float> acc(size_t(L), 0.f);
      std::vector<double> half(size_t(L), 0.0);
      for (int i = 0; i < N; ++i) {  // rank i's copy of it
        std::vector<float> d(size_t(L), 0.f);
        for (int64_t k = 0; k < L && r * L + k < len; ++k) {
          const int64_t j = lo + r * L + k;
          d[size_t(k)] = theta[size_t(j)] - all[size_t(int64_t(i) * n + j)];
          exact[size_t(r * L + k)] += d[size_t(k)];
        }
        const auto dq = quantize_dequantize(d, f, block);
        for (size_t k = 0; k < d.size(); ++k) {
          acc[k] += dq[k];
          half[k] += bound(d, k);
        }
      }
      for (float& v : acc) v /= float(N);
      const auto mean = quantize_dequantize(acc, f, block);
      for (int64_t k = 0; k < L && r * L + k < len; ++k) {
        out[size_t(r * L + k)] = mean[size_t(k)];
        err_bound[size_t(r * L + k)] = half[size_t(k)] / N + bound(acc, size_t(k)) + 1e-12;
      }
    }
    for (size_t j = 0; j < out.size(); ++j) {
      const double err = std::fabs(double(out[j]) - exact[j] / N);
      if (f.mbits < 0) {
        EXPECT_LE(err, err_bound[j]) << "element " << j;
      }
      quant_apart = std::max(quant_apart, err);
    }
    delta[size_t(p)] = out;
    const double S = double(packed(L, block, four_bits));
    payload += (N - 1) * S + S;
    wire += 2.0 * (N - 1) * S;
  };
  auto apply_and_compare = [&](int p) {
    const int64_t lo = frags[size_t(p)].first, hi = frags[size_t(p)].second;
    for (int64_t j = lo; j < hi; ++j) theta[size_t(j)] -= delta[size_t(p)][size_t(j - lo)];
    const auto got = s.theta_global().to_vector();
    double worst = 0, scale = 0;
    for (int64_t j = lo; j < hi; ++j) {
      worst = std::max(worst, double(std::fabs(got[size_t(j)] - theta[size_t(j)])));
      scale = std::max(scale, double(std::fabs(delta[size_t(p)][size_t(j - lo)])));
    }
    exact_tol = 1e-6 * scale / f.V;
    EXPECT_LE(worst, exact_tol) << "fragment " << p;
    ++compared;
  };
  const int64_t epochs = 2, steps = 6;
  int64_t global = 0, pending = -1;
  for (int64_t e = 0; e < epochs; ++e) {
    s.begin_epoch(e);
    for (int64_t k = 0; k < steps; ++k, ++global) {
      StepInfo info{e, k, global, steps, epochs};
      s.plan(info);
      dist.grad(R, e, k);
      s.after_backward(info);
      dist.sgd->step();
      Tensor all = Tensor::zeros({n * N});
      world->allgather(dist.arena->params(), all);
      const std::vector<float> locals = all.to_vector();
      s.after_step(info);
      const int64_t done = global + 1;
      if (pending >= 0 && done % 2 == 1) {
        apply_and_compare(int(pending));
        pending = -1;
      }
      if (done % 4 == 2) pending = 0;
      if (done % 4 == 0) pending = 1;
      if (done % 2 == 0) send(int(pending), locals);
    }
    s.end_epoch(e, 0.0);
    s.drain();
  }
  const CommStats st = s.take_stats();
  EXPECT_EQ(compared, 5);
  s.finish_training();
  EXPECT_EQ(s.outer_steps(), (std::vector<int64_t>{4, 4}));
  EXPECT_TRUE(same_bytes_everywhere(dist.arena->params()));
  EXPECT_EQ(as_double(dist.arena->params()), as_double(s.theta_global()));
  if (N == 1) return;  // one rank: nothing exchanged, nothing quantised
  EXPECT_GT(quant_apart, 100 * exact_tol);
  EXPECT_EQ(st.bytes_sent, payload);
  EXPECT_EQ(st.wire_bytes, wire);
  EXPECT_EQ(st.collectives, 6);  // one allgather per send; the shards go point to point
  EXPECT_EQ(st.allreduces, 0);
  if (R == 0)
    std::printf("[streaming_diloco %s] %d ranks: max |quantised - exact mean| %.3g\n", f.name, N,
                quant_apart);
}

TEST(StreamingDiLoCo, Int4OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized({"int4", 7, 4});
}

TEST(StreamingDiLoCo, Int8OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized({"int8", 127, 8});
}

TEST(StreamingDiLoCo, Fp8E4m3OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized({"fp8_e4m3", 448, 8, 3, -6});
}

TEST(StreamingDiLoCo, Fp4E2m1OuterGradientsMatchTheSerialQuantisedMean) {
  check_quantized({"fp4_e2m1", 6, 4, 1, 0});
}

TEST(StreamingDiLoCo, QuantizeRejectsBadOptions) {
  Options o;
  o.set("streaming_diloco.H", "4");
  o.set("streaming_diloco.quantize", "int2");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
  o.set("streaming_diloco.quantize", "fp4");  // which 4-bit float must be said
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
  o.set("streaming_diloco.quantize", "int8");
  o.set("streaming_diloco.wire", "bf16");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
  o.set("streaming_diloco.wire", "f32");
  o.set("streaming_diloco.quantize_block", "0");
  EXPECT_THROW((StreamingDiLoCoStrategy{topology_of(o), o}), Error);
}

}  // namespace
}  // namespace dplab
