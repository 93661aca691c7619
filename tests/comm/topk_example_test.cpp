// The custom-algorithm example (tools/examples/topk_algo/topk_strategy.h) in process, on 1-3
// ranks: its top-k selection, error feedback and sparse averaging against a serial computation
// of every rank's step written here from the definition (sort by |g'|, lower index first on
// ties), its statistics, and its checkpoint state (a restored strategy continues bitwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dplab/comm/mpi_env.h"
#include "topk_strategy.h"

namespace dplab {
namespace {

// Rank r's gradient at step s, element i: multiples of 1/8 in [-11/8, 11/8], many ties in |g|.
float grad_value(int r, int s, int64_t i) {
  return float((r * 7 + int(i) * 5 + s * 3) % 23 - 11) / 8.0f;
}

std::unique_ptr<ParamArena> make_arena() {
  std::vector<NamedTensor> ps = {{"a", Tensor::full({7}, 1.0)}, {"b", Tensor::full({13}, 2.0)}};
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order, /*align_elems=*/1);
}

// Every rank's residual and the averaged gradient, step by step, without the strategy.
struct SerialTopK {
  int world;
  int64_t n, k;
  std::vector<std::vector<float>> residual;  // per rank
  SerialTopK(int w, int64_t n_, int64_t k_)
      : world(w), n(n_), k(k_), residual(size_t(w), std::vector<float>(size_t(n_), 0.f)) {}
  // Returns the averaged gradient of step s; `sent_plus_kept_ok` checks sent + r == g + old r.
  std::vector<float> step(int s, bool& sent_plus_kept_ok) {
    std::vector<float> sum(size_t(n), 0.f);
    std::vector<std::vector<float>> sent(size_t(world), std::vector<float>(size_t(n), 0.f));
    for (int r = 0; r < world; ++r) {
      std::vector<float> gp(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) gp[size_t(i)] = grad_value(r, s, i) + residual[r][size_t(i)];
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::abs(gp[size_t(a)]) > std::abs(gp[size_t(b)]);
      });
      std::vector<float> old = residual[r];
      residual[r] = gp;
      for (int64_t j = 0; j < k; ++j) {
        sent[r][size_t(order[size_t(j)])] = gp[size_t(order[size_t(j)])];
        residual[r][size_t(order[size_t(j)])] = 0.f;
      }
      for (int64_t i = 0; i < n; ++i)
        sent_plus_kept_ok = sent_plus_kept_ok && sent[r][size_t(i)] + residual[r][size_t(i)] ==
                                                     grad_value(r, s, i) + old[size_t(i)];
    }
    for (int r = 0; r < world; ++r)
      for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += sent[r][size_t(i)];
    for (auto& v : sum) v /= float(world);
    return sum;
  }
};

struct TopKRun {
  std::unique_ptr<ParamArena> arena = make_arena();
  std::unique_ptr<TopKStrategy> strategy;
  explicit TopKRun(double ratio) {
    strategy = std::make_unique<TopKStrategy>(std::make_shared<Topology>(mpi_world()), ratio);
    TrainContext ctx;
    ctx.arena = arena.get();
    strategy->setup(ctx);
    strategy->take_stats();  // the setup broadcast
  }
  std::vector<float> step(int s) {
    float* g = arena->grads().data<float>();
    for (int64_t i = 0; i < arena->numel(); ++i) g[i] = grad_value(strategy->rank(), s, i);
    strategy->after_backward({});
    return arena->grads().to_vector();
  }
};

TEST(TopKExample, MatchesSerialTopKWithErrorFeedback) {
  TopKRun run(0.25);  // n = 20 parameters: k = 5
  const int world = run.strategy->world_size(), rank = run.strategy->rank();
  ASSERT_EQ(run.arena->numel(), 20);
  SerialTopK serial(world, 20, 5);
  for (int s = 0; s < 4; ++s) {
    bool sent_plus_kept_ok = true;
    const std::vector<float> expect = serial.step(s, sent_plus_kept_ok);
    EXPECT_TRUE(sent_plus_kept_ok) << "step " << s;
    EXPECT_EQ(run.step(s), expect) << "averaged sparse gradient, step " << s;
    EXPECT_EQ(run.strategy->residual().to_vector(), serial.residual[size_t(rank)])
        << "residual, step " << s;
    // Two allgathers of k int32 indices and k f32 values.
    const CommStats st = run.strategy->take_stats();
    EXPECT_EQ(st.bytes_sent, 5 * 4 + 5 * 4);
    EXPECT_EQ(st.collectives, 2);
  }
}

TEST(TopKExample, HandValuesAtOneStep) {
  // Step 0 from a zero residual, k = 1, the hand computation of grad_value: rank r's largest
  // |g| among i = 0..19 is 11/8 (value -11/8 where (7r + 5i) % 23 == 0, or 11/8 where it is
  // 22); the averaged gradient holds each rank's pick / world.
  TopKRun run(0.05);  // k = max(1, 0.05 * 20) = 1
  const int world = run.strategy->world_size();
  std::vector<float> expect(20, 0.f);
  for (int r = 0; r < world; ++r) {
    int64_t pick = -1;
    for (int64_t i = 0; i < 20 && pick < 0; ++i)
      if ((r * 7 + i * 5) % 23 == 0 || (r * 7 + i * 5) % 23 == 22) pick = i;
    ASSERT_GE(pick, 0);
    expect[size_t(pick)] += ((r * 7 + pick * 5) % 23 == 0 ? -11.f : 11.f) / 8.f;
  }
  for (auto& v : expect) v /= float(world);
  EXPECT_EQ(run.step(0), expect);
}

TEST(TopKExample, RestoredStateContinuesBitwise) {
  TopKRun a(0.25), b(0.25);
  for (int s = 0; s < 2; ++s) a.step(s);
  StateDict saved;
  a.strategy->save_state(saved);
  b.strategy->load_state(saved);
  EXPECT_EQ(b.strategy->residual().to_vector(), a.strategy->residual().to_vector());
  EXPECT_EQ(b.step(2), a.step(2));
  StateDict other;
  save_algorithm_name(other, "allreduce");
  EXPECT_THROW(b.strategy->load_state(other), Error);
}

}  // namespace
}  // namespace dplab
