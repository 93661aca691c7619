// The algorithms on the virtual clock (issue #20 item 3: "algorithms that read time read the
// virtual clock"; docs/virtual_cluster.md, "One time base"). 2 ranks as 2 nodes of the test
// platform of virtual_world.h (network 10 us, 1 GB/s), manual compute, and a TrainContext whose
// time is the rank's VirtualTimeSource: the tests drive a strategy's hooks by hand, add compute
// to the clock between them, and check the figures the strategy reports against the cost
// model's formulas written out here. One rank also sleeps in real time (a loaded host), which
// must change nothing.
//
// With 2 ranks on 2 nodes (P = 2) and n bytes:
//   allreduce (ring)  2(P-1) alpha + 2(P-1)/P n/B = 2 alpha + n/B
//   broadcast (ring)  (P-1) alpha + n/B           = alpha + n/B
//
// How each test fails on the old behaviour (the algorithms timed with steady_clock): manual
// compute takes no wall time and the cost model's durations are never slept, so wall-clock
// figures are microseconds where the model says milliseconds, and the rank that does not sleep
// waits >= 50 ms of real time for the one that does (expected: a few ms).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "common/trace_check.h"
#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/daso.h"
#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/comm/algorithms/oscars.h"
#include "dplab/comm/cluster/virtual_time_source.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/topology.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/optim/sgd.h"
#include "virtual_world.h"

namespace dplab::test {
namespace {

constexpr int kWorld = 2;
constexpr double kAllreduce = 2 * kAlpha + kN / kB;  // 1.02 ms for the 1 MB arena
constexpr double kBroadcast = kAlpha + kN / kB;      // 1.01 ms

void real_sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A world in virtual time, its topology, a 1 MB arena (one segment of kFloats f32) and the
// context an algorithm gets from the driver, with the rank's virtual clock as its time.
// ranks_per_node 1: 2 nodes of 1 rank; 2: one node of 2.
struct Bench {
  World w;
  std::shared_ptr<Topology> topo;
  std::unique_ptr<ParamArena> arena;
  TrainContext ctx;
  int rank;

  explicit Bench(int ranks_per_node = 1)
      : w(make_world(ranks_per_node)),
        topo(std::make_shared<Topology>(w.comm)),
        rank(w.comm->rank()) {
    EXPECT_EQ(w.comm->size(), kWorld) << "these tests run on 2 ranks";
    std::vector<NamedTensor> ps = {{"w", Tensor::full({kFloats}, 0.5f)}};
    arena = std::make_unique<ParamArena>(ps, ParamArena::Layout::given_order);
    ctx.arena = arena.get();
    ctx.time = std::make_shared<cluster::VirtualTimeSource>(w.vt);
  }
  double now() { return w.vt->clock.now(); }
  // "Backward": this rank's gradient (rank + 1) and its grad-ready hooks.
  void gradients() {
    const auto& seg = arena->segments()[0];
    Tensor g = seg.param.grad();
    float* p = g.data<float>();
    for (int64_t j = 0; j < seg.numel; ++j) p[j] = float(rank + 1);
    for (auto& h : seg.param.impl().grad_ready_hooks) h(seg.param);
  }
};

StepInfo step_info(int64_t epoch, int64_t k, int64_t steps_per_epoch, int64_t epochs) {
  StepInfo s;
  s.epoch = epoch;
  s.step_in_epoch = k;
  s.global_step = epoch * steps_per_epoch + k;
  s.steps_per_epoch = steps_per_epoch;
  s.total_epochs = epochs;
  return s;
}

// ---- Oscars: step times, T* and tau from virtual compute --------------------------------------

// Eq. 3 of Oscars (Huang, arXiv 2102.08550) by brute force over every microsecond, independent
// of comm/algorithms/oscars_search.cpp: T* = argmin_T max_i mod(T, t_i) subject to
// floor(T/t_min) - floor(T/t_max) < M, T >= t_max, ties to the smallest T; tau_i = floor(T*/t_i).
struct Eq3 {
  int64_t T = 0;
  std::vector<int64_t> tau;
};
Eq3 eq3(const std::vector<int64_t>& t, int64_t M) {
  const int64_t tmin = *std::min_element(t.begin(), t.end());
  const int64_t tmax = *std::max_element(t.begin(), t.end());
  Eq3 best;
  int64_t best_wait = INT64_MAX;
  for (int64_t T = tmax; T <= 4 * M * tmax; ++T) {
    if (T / tmin - T / tmax >= M) continue;
    int64_t wait = 0;
    for (int64_t ti : t) wait = std::max(wait, T % ti);
    if (wait < best_wait) {
      best_wait = wait;
      best.T = T;
    }
  }
  for (int64_t ti : t) best.tau.push_back(best.T / ti);
  return best;
}

constexpr int64_t kStepUs = 3000;  // rank 0's step compute; rank 1's is twice that

// Oscars at 2 ranks: profiles 1 + 3 steps (rank 1's compute twice rank 0's, on the clock only),
// searches, then runs two rounds; `sleeper` sleeps 20 ms of real time in each of its steps.
std::map<std::string, double> run_oscars(int sleeper) {
  Bench b;
  Options opt;
  opt.set("oscars.profile_discard", "1");
  opt.set("oscars.profile_measure", "3");
  opt.set("oscars.M", "4");
  OscarsStrategy s(b.topo, opt);
  s.setup(b.ctx);
  const double step_s = 1e-6 * double(b.rank == 0 ? kStepUs : 2 * kStepUs);
  const int64_t ticks = 4 + 2 * 2;  // profiling, then two rounds of max tau = 2 ticks
  for (int64_t k = 0; k < ticks; ++k) {
    const StepInfo info = step_info(0, k, ticks, 1);
    if (s.plan(info).compute) {
      if (b.rank == sleeper) real_sleep_ms(20);
      b.w.vt->clock.add_compute(step_s);
    }
    s.after_step(info);
  }
  EXPECT_EQ(s.rounds(), 2);
  return s.state();
}

// Old behaviour: t_i was steady_clock from plan() to after_step(): a few microseconds of real
// work on the rank that does not sleep and >= 20000 us on the one that does, so t_us, T* and
// tau would follow the sleeps (and differ between the two runs), not the 3000/6000 us here.
TEST(VirtualAlgorithms, OscarsPlansFromVirtualStepTimes) {
  const std::map<std::string, double> a = run_oscars(0);  // the virtually fast rank sleeps
  const std::map<std::string, double> b = run_oscars(1);
  const int R = MpiEnv::get().world_rank();
  const Eq3 want = eq3({kStepUs, 2 * kStepUs}, 4);
  for (const auto* st : {&a, &b}) {
    EXPECT_EQ(st->at("t_us"), double(R == 0 ? kStepUs : 2 * kStepUs));
    EXPECT_EQ(st->at("T_us"), double(want.T));
    EXPECT_EQ(st->at("tau_r0"), double(want.tau[0]));
    EXPECT_EQ(st->at("tau_r1"), double(want.tau[1]));
    // Both ranks reach a round's average at the same virtual time (rank 0 after tau_0 steps of
    // 3 ms, rank 1 after tau_1 of 6 ms): the measured wait is the average alone.
    EXPECT_EQ(st->at("wait_pred_us"), 0.0);
    EXPECT_NEAR(st->at("wait_meas_last_us"), 1e6 * kAllreduce, 1e-6);
  }
  EXPECT_EQ(a, b);  // identical whoever sleeps
}

// ---- AllReduce: exposed wait = the modelled excess over backward -------------------------------

// Old behaviour: the setup broadcast and the buffer average were timed with steady_clock: on
// rank 0 the broadcast's figure is >= 50 ms (it waits for rank 1's real sleep), and the buffer
// average takes microseconds of real time instead of the modelled 0.12 ms.
TEST(VirtualAlgorithms, AllReduceReportsTheModelledTimes) {
  Bench b;
  constexpr int64_t kBufFloats = 25000;  // a BatchNorm-like buffer of 1e5 bytes
  constexpr double kBufBytes = 4.0 * kBufFloats;
  b.ctx.buffers = {{"bn.running_mean", Tensor::full({kBufFloats}, float(b.rank))}};
  Options opt;
  AllReduceStrategy s(b.topo, opt);
  if (b.rank == 1) real_sleep_ms(50);
  s.setup(b.ctx);
  // Setup: the arena's and the buffer's broadcasts, queued on the world communicator.
  const double t_setup = kBroadcast + (kAlpha + kBufBytes / kB);
  CommStats st = s.take_stats();
  EXPECT_TIME(st.exposed_wait_s, t_setup);
  EXPECT_TIME(st.in_flight_s, t_setup);
  EXPECT_TIME(b.now(), t_setup);

  // A step: 2 ms of backward before the bucket is ready, 0.5 ms after: the bucket's allreduce
  // (1.02 ms) outlasts backward by 0.52 ms, which is the exposed wait.
  const StepInfo info = step_info(0, 0, 1, 1);
  s.before_forward(info);
  b.w.vt->clock.add_compute(2e-3);
  if (b.rank == 0) real_sleep_ms(50);
  b.gradients();
  b.w.vt->clock.add_compute(0.5e-3);
  s.after_backward(info);
  st = s.take_stats();
  EXPECT_TIME(st.exposed_wait_s, kAllreduce - 0.5e-3);
  EXPECT_TIME(st.in_flight_s, kAllreduce);
  EXPECT_TIME(b.now(), t_setup + 2e-3 + kAllreduce);
  EXPECT_EQ(b.arena->grads().data<float>()[0], 1.5f);  // (1 + 2) / 2

  // drain: the buffer average, 2 alpha + 1e5 / B.
  s.drain();
  st = s.take_stats();
  EXPECT_TIME(st.exposed_wait_s, 2 * kAlpha + kBufBytes / kB);
  EXPECT_TIME(st.in_flight_s, 2 * kAlpha + kBufBytes / kB);
}

// ---- DC-S3GD: compute time, exposed wait and time in flight on the virtual clock ---------------

// Old behaviour: compute_s_per_step was steady_clock from before_forward to after_backward (>= 50
// ms on rank 1, which sleeps there; microseconds on rank 0) and the exposed wait was real time
// (>= 50 ms on rank 0, which waits for rank 1's allreduce).
// It also covers the helper thread: during rank 1's real sleep the progress thread's test()
// completes the allreduce (in real time only); the compute thread's wait must still move the
// clock to the allreduce's virtual end. Completing it with complete_before_compute(), which
// returns at once on a completed request, left rank 1's clock behind (exposed wait 0).
TEST(VirtualAlgorithms, Dcs3gdReportsVirtualTimes) {
  Bench b;
  SGDOptions so;
  so.lr = 0.01;
  so.momentum = 0.9;
  SGD sgd(*b.arena, so);
  b.ctx.optimizer = &sgd;
  Options opt;  // the progress thread tests the request every 200 us of real time
  Dcs3gdStrategy s(b.topo, opt);
  s.setup(b.ctx);
  EXPECT_TIME(s.take_stats().exposed_wait_s, kBroadcast);  // the setup broadcast
  constexpr double kCompute = 0.3e-3;                      // forward + backward
  const int steps = 3;  // step 0 has nothing to send; steps 1 and 2 each allreduce the update
  for (int t = 0; t < steps; ++t) {
    const StepInfo info = step_info(0, t, 0, 0);
    s.plan(info);
    b.arena->zero_grad();
    s.before_forward(info);  // posts the previous update's allreduce (1.02 ms)
    if (b.rank == 1) real_sleep_ms(50);
    b.w.vt->clock.add_compute(kCompute);
    b.gradients();
    s.after_backward(info);  // waits for it: 1.02 - 0.3 ms exposed
    s.after_step(info);
  }
  const CommStats st = s.take_stats();
  EXPECT_EQ(st.allreduces, steps - 1);
  EXPECT_TIME(st.in_flight_s, (steps - 1) * kAllreduce);
  EXPECT_TIME(st.exposed_wait_s, (steps - 1) * (kAllreduce - kCompute));
  EXPECT_TIME(s.state().at("compute_s_per_step"), kCompute);
}

// ---- DASO: merge waits, times in flight, global syncs and the loss average ---------------------

// Old behaviour: DASO's waits were steady_clock: rank 0 waits >= 50 ms of real time for rank 1
// at every merge and blocking sync, and the figures are not the model's.
TEST(VirtualAlgorithms, DasoReportsVirtualTimes) {
  Bench b;  // 2 nodes x 1 rank: the global group is the world; no node-local traffic
  Options opt;
  opt.set("daso.phases", "false");  // every epoch cycles
  opt.set("daso.B_max", "2");
  opt.set("daso.S", "1");
  DasoStrategy s(b.topo, opt);
  s.setup(b.ctx);
  EXPECT_TIME(s.take_stats().exposed_wait_s, kBroadcast);
  // One epoch of 4 batches with B = 2, S = 1: sends after batches 0 and 2, each merged one
  // batch later; a blocking sync after batch 3 (the epoch's end). Each global allreduce lasts
  // 1.02 ms against 0.4 ms of compute per batch, so each merge waits 0.62 ms.
  constexpr double kCompute = 0.4e-3;
  const int64_t T = 4;
  for (int64_t t = 0; t < T; ++t) {
    const StepInfo info = step_info(0, t, T, 1);
    s.plan(info);
    s.before_forward(info);
    if (b.rank == 1) real_sleep_ms(50);
    b.w.vt->clock.add_compute(kCompute);
    s.after_backward(info);
    s.after_step(info);
  }
  EXPECT_EQ(s.state().at("global_syncs"), 3.0);
  s.end_epoch(0, 1.0);  // the loss average: 4 bytes
  const double loss_avg = 2 * kAlpha + 4.0 / kB;
  const CommStats st = s.take_stats();
  EXPECT_EQ(st.allreduces, 4 + T);  // + the node-local GradSync's bucket per batch (1-rank node)
  EXPECT_TIME(st.exposed_wait_s, 2 * (kAllreduce - kCompute) + kAllreduce + loss_avg);
  EXPECT_TIME(st.in_flight_s, 3 * kAllreduce + loss_avg);
  // Batch 0 ends at kBroadcast + c (send), batch 1's merge moves the clock to that send's end
  // (+ D), batch 2 adds c (send), batch 3's merge adds D and its blocking sync D again.
  EXPECT_TIME(b.now(), kBroadcast + 2 * kCompute + 3 * kAllreduce + loss_avg);
}

// ---- GradSync's trace events on the virtual axis ----------------------------------------------

// One traced backward pass of `sync` with a virtual tracer (steps "all"): 2 ms of compute, the
// gradient and its hook (rank 1 sleeps 30 ms of real time first), 0.5 ms more, finish().
// Returns this rank's complete events by name: {ts, dur} in us.
std::map<std::string, std::pair<double, double>> traced_step(Bench& b, GradSync& sync) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("dplab_virtual_trace_" + std::to_string(::getpid()) + "_" + std::to_string(b.rank)))
          .string();
  std::filesystem::remove_all(dir);
  {
    trace::TracerOptions o;
    o.dir = dir;
    o.steps = "all";
    trace::Tracer tr(o);
    tr.set_time(b.ctx.time);
    trace::RankPlace place;
    place.rank = b.rank;
    place.world_size = kWorld;
    place.host = "h";
    tr.start(place, trace::Clock::now(), 1);
    tr.begin_step(0);
    sync.set_tracer(&tr);
    b.w.vt->clock.add_compute(2e-3);
    if (b.rank == 1) real_sleep_ms(30);
    b.gradients();
    b.w.vt->clock.add_compute(0.5e-3);
    sync.finish();
    sync.set_tracer(nullptr);
    tr.close();
  }
  const nlohmann::json j = read_trace(dir + "/rank_" + std::to_string(b.rank) + ".json");
  check_trace_structure(j);
  std::map<std::string, std::pair<double, double>> ev;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ev[e["name"].get<std::string>()] = {e["ts"].get<double>(), e["dur"].get<double>()};
    if (e["name"] == "allreduce bucket 0")
      ev["ready_us"] = {e["args"]["ready_us"].get<double>(), 0.0};
  }
  std::filesystem::remove_all(dir);
  return ev;
}

// The trace writes microseconds with 3 decimals; Tracer::at truncates to nanoseconds.
#define EXPECT_US(a, b) EXPECT_NEAR((a), (b), 5e-3)

// The bucket's comm event is its virtual interval (ready to end) and the finish wait runs from
// the end of backward to the bucket's end. Old behaviour: the bucket event was stamped with
// steady_clock when the communication thread ran it (microseconds after the trace's origin,
// plus rank 1's real sleep), not at 2 ms.
TEST(VirtualAlgorithms, GradSyncTraceEventsAreVirtual) {
  Bench b;
  GradSync sync(*b.arena, b.w.comm, GradSyncOptions{});
  auto ev = traced_step(b, sync);
  ASSERT_TRUE(ev.count("allreduce bucket 0") && ev.count("wait allreduce"));
  EXPECT_US(ev["allreduce bucket 0"].first, 2e3);
  EXPECT_US(ev["allreduce bucket 0"].second, 1e6 * kAllreduce);
  EXPECT_US(ev["ready_us"].first, 2e3);
  EXPECT_US(ev["wait allreduce"].first, 2.5e3);
  EXPECT_US(ev["wait allreduce"].second, 1e6 * (kAllreduce - 0.5e-3));
}

// Hierarchical mode on one node of 2 ranks (intra link 1 us, 100 GB/s): each stage's event runs
// from its post (the previous stage's end) to its end. For the 1 MB bucket:
//   reduce-scatter in the node  (P-1) alpha + (P-1)/P n/B = 1 us + 0.5 x 1e6 / 100e9 = 6 us
//   allreduce across nodes      one rank per cross group: 0
//   allgather in the node       as the reduce-scatter: 6 us
// Old behaviour: the stages were stamped with steady_clock as the thread ran them.
TEST(VirtualAlgorithms, GradSyncHierarchicalStagesAreVirtual) {
  Bench b(2);
  GradSyncOptions o;
  o.hierarchical = true;
  GradSync sync(*b.arena, b.w.comm, o, b.topo->node_ptr(), b.topo->cross_ptr());
  auto ev = traced_step(b, sync);
  const double stage = 1e6 * (kAlphaIntra + 0.5 * kN / kBIntra);  // 6 us
  ASSERT_TRUE(ev.count("bucket 0 reduce_scatter (node)") &&
              ev.count("bucket 0 allreduce (cross)") && ev.count("bucket 0 allgather (node)"));
  EXPECT_US(ev["bucket 0 reduce_scatter (node)"].first, 2e3);
  EXPECT_US(ev["bucket 0 reduce_scatter (node)"].second, stage);
  EXPECT_US(ev["bucket 0 allreduce (cross)"].first, 2e3 + stage);
  EXPECT_US(ev["bucket 0 allreduce (cross)"].second, 0.0);
  EXPECT_US(ev["bucket 0 allgather (node)"].first, 2e3 + stage);
  EXPECT_US(ev["bucket 0 allgather (node)"].second, stage);
  EXPECT_US(ev["allreduce bucket 0"].first, 2e3);
  EXPECT_US(ev["allreduce bucket 0"].second, 2 * stage);
  // The bucket ends 12 us after it was ready, before backward ends (2.5 ms): no wait.
  EXPECT_US(ev["wait allreduce"].first, 2.5e3);
  EXPECT_US(ev["wait allreduce"].second, 0.0);
  EXPECT_EQ(b.arena->grads().data<float>()[0], 1.5f);  // (1 + 2) / 2
}

}  // namespace
}  // namespace dplab::test
