// A strategy written outside the library (issue #18, item 1) builds on the same tools as the
// built-in ones: Topology for its communicators, GradSync for bucketed, overlapped gradient
// averaging, CommStats for its statistics and StateDict for its state. Defined here from the
// installed headers alone, it must average exactly as the built-in AllReduceStrategy does
// (bitwise: the same GradSync underneath), agree with a serial mean, count its traffic, and
// carry its own state through save_state/load_state. Runs at 1-3 ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"
#include "dplab/core/state_dict.h"

namespace dplab {
namespace {

// "Averaged gradients, counted": the experiment's own algorithm in a dozen lines.
class CountingAverage : public Strategy {
 public:
  explicit CountingAverage(std::shared_ptr<Topology> topo)
      : topo_(std::move(topo)), opt_(GradSyncOptions::from_options(Options(), "mine.")) {}
  std::string name() const override { return "counting_average"; }
  void setup(TrainContext& ctx) override {
    Strategy::setup(ctx);
    sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->world_ptr(), opt_);
  }
  void after_backward(const StepInfo&) override {
    sync_->finish();
    ++averaged_;
  }
  CommStats take_stats() override { return sync_->take_stats(); }
  void save_state(StateDict& out) const override { out.put_int("averaged", averaged_); }
  void load_state(const StateDict& in) override { averaged_ = in.get_int("averaged"); }
  int rank() const override { return topo_->world().rank(); }
  int world_size() const override { return topo_->world().size(); }
  int64_t averaged() const { return averaged_; }

 private:
  std::shared_ptr<Topology> topo_;
  GradSyncOptions opt_;
  std::unique_ptr<GradSync> sync_;
  int64_t averaged_ = 0;
};

// Rank r's gradient, element i: multiples of 1/8 in [-2, 2], so every rank's sum is exact in
// f32 and the mean differs from the exact value by at most the one rounding of the division.
float grad_value(int r, int64_t i) {
  return float((r * 5 + int(i) * 3) % 33 - 16) / 8.0f;
}

std::unique_ptr<ParamArena> make_arena() {
  std::vector<NamedTensor> ps = {{"w", Tensor::full({9}, 1.0)}, {"b", Tensor::full({5}, 0.5)}};
  return std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order, /*align_elems=*/1);
}

std::vector<float> averaged_by(Strategy& s, ParamArena& arena) {
  TrainContext ctx;
  ctx.arena = &arena;
  s.setup(ctx);
  float* g = arena.grads().data<float>();
  for (int64_t i = 0; i < arena.numel(); ++i) g[i] = grad_value(s.rank(), i);
  s.after_backward({});
  return arena.grads().to_vector();
}

TEST(ExternalStrategy, AveragesThroughGradSyncAsTheBuiltInAllReduce) {
  auto topo = std::make_shared<Topology>(mpi_world());
  auto arena_mine = make_arena(), arena_builtin = make_arena();
  CountingAverage mine(topo);
  AllReduceStrategy builtin(topo, Options());
  const std::vector<float> a = averaged_by(mine, *arena_mine);
  const std::vector<float> b = averaged_by(builtin, *arena_builtin);
  ASSERT_EQ(a.size(), b.size());
  const int world = mine.world_size();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "element " << i;  // the same GradSync: bitwise
    double sum = 0;
    for (int r = 0; r < world; ++r) sum += grad_value(r, int64_t(i));
    EXPECT_NEAR(a[i], sum / world, 2.0 * std::ldexp(1.0, -23)) << "element " << i;
  }
  // Its statistics are GradSync's: the 14 gradients' bytes in at least one allreduce.
  const CommStats st = mine.take_stats();
  if (world > 1) {
    EXPECT_GE(st.allreduces, 1);
    EXPECT_EQ(st.bytes_sent, 14.0 * sizeof(float));
  }
  EXPECT_EQ(mine.averaged(), 1);
  // Its own state through the checkpoint interface.
  StateDict saved;
  mine.save_state(saved);
  CountingAverage restored(topo);
  restored.load_state(saved);
  EXPECT_EQ(restored.averaged(), 1);
}

}  // namespace
}  // namespace dplab
