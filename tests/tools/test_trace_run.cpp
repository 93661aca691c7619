// `dplab train --trace` end to end under mpiexec -n 2 (docs/trace.md): the per-rank files and
// the merged trace parse and carry one named process per rank; each step of each rank has its
// forward, backward and optimizer events and GradSync's bucket events, the first of which
// starts before that step's backward ends (communication overlaps backward); with
// allreduce.bucket_cap_mb = 0 one allreduce per parameter tensor; the window is respected;
// local SGD's parameter averages appear; and tracing leaves the training bitwise unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../data/temp_dir.h"
#include "common/trace_check.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::ScopedTempDir;
using test::slurp;

// 2048 training images: 4 steps of 256 per rank on two ranks, one epoch. Batches this large
// make backward last long enough (tens of ms) that the communication thread is scheduled
// inside it even on a loaded machine.
const std::string kJob =
    "train --model mnist_cnn --data fashion-mnist --batch 256 --threads 1 --algo allreduce "
    "--set data.train_limit=2048 --set data.test_limit=200 --set progress=off";
constexpr int kSteps = 4;
constexpr int kBatch = 256;

// mnist_cnn's parameters, counted from models/mnist_cnn.cpp by hand: cnn1 Conv2d(1, 16, 5)
// weight 16*1*5*5 and bias 16, cnn2 Conv2d(16, 32, 5) weight 32*16*5*5 and bias 32, fc1
// Linear(512, 10) weight 10*512 and bias 10.
constexpr int kTensors = 6;
// What travels is the gradient arena: every tensor starts at a multiple of 16 floats
// (ParamArena's 64-byte alignment), in the order gradients become ready (fc1 first), so fc1's
// bias of 10 floats takes 16 and nothing follows the last tensor.
constexpr double kArenaBytes = 4.0 * (16 + 10 * 512 + 32 + 32 * 16 * 25 + 16 + 16 * 25);
// Buckets of 0.01 MiB (10485.76 bytes) over the gradients in the order they become ready
// (fc1, cnn2, cnn1; bias and weight): fc1 (20520 bytes) closes the first, cnn2 (51328) the
// second, cnn1 (1664) is the last: 3 buckets.
const std::string kSmallBuckets =
    " --set allreduce.first_bucket_mb=0.01 --set allreduce.bucket_cap_mb=0.01";
constexpr int kSmallBucketCount = 3;

test::CliResult run2(const std::string& args, const fs::path& scratch) {
  return test::run_dplab_mpi(2, args, scratch);
}

struct Ev {
  std::string name, cat;
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;
  nlohmann::json args;
  double end() const { return ts + dur; }
};

// The complete events of `j` by (rank, step); events without a step under step -1.
std::map<std::pair<int, int64_t>, std::vector<Ev>> by_rank_step(const nlohmann::json& j) {
  std::map<std::pair<int, int64_t>, std::vector<Ev>> r;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    Ev v{e["name"],
         e["cat"],
         e["pid"],
         e["tid"],
         e["ts"],
         e["dur"],
         e.value("args", nlohmann::json::object())};
    const int64_t step = v.args.contains("step") ? v.args["step"].get<int64_t>() : -1;
    r[{v.pid, step}].push_back(v);
  }
  return r;
}

std::vector<Ev> named(const std::vector<Ev>& evs, const std::string& prefix) {
  std::vector<Ev> r;
  for (const Ev& e : evs)
    if (e.name.starts_with(prefix)) r.push_back(e);
  return r;
}

TEST(TraceRun, TwoRankAllreduceOverlapsBackwardAndLeavesTrainingUnchanged) {
  ScopedTempDir dir("trace-run-allreduce");
  const std::string traced = dir.file("traced"), plain = dir.file("plain");
  auto r =
      run2(kJob + kSmallBuckets + " --trace --set trace.steps=all --out " + traced, dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run2(kJob + kSmallBuckets + " --out " + plain, dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  // Tracing never changes what is computed.
  EXPECT_EQ(slurp(fs::path(traced) / "final.safetensors"),
            slurp(fs::path(plain) / "final.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(plain) / "trace"));
  EXPECT_FALSE(fs::exists(fs::path(plain) / "trace.json"));

  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json f =
        test::read_trace((fs::path(traced) / "trace" / fmt::format("rank_{}.json", rank)).string());
    test::check_trace_structure(f);
    EXPECT_EQ(f["otherData"]["rank"], rank);
    EXPECT_EQ(f["otherData"]["world_size"], 2);
  }
  const nlohmann::json j = test::read_trace((fs::path(traced) / "trace.json").string());
  test::check_trace_structure(j);
  EXPECT_EQ(j["otherData"]["steps"], "all");
  std::map<int, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
  ASSERT_EQ(names.size(), 2u);
  EXPECT_TRUE(names[0].starts_with("rank 0 (node 0, ")) << names[0];
  EXPECT_TRUE(names[1].starts_with("rank 1 (node 0, ")) << names[1];

  const auto ev = by_rank_step(j);
  for (int rank = 0; rank < 2; ++rank) {
    for (int64_t step = 0; step < kSteps; ++step) {
      SCOPED_TRACE(fmt::format("rank {} step {}", rank, step));
      ASSERT_TRUE(ev.count({rank, step}));
      const auto& evs = ev.at({rank, step});
      const auto fwd = named(evs, "forward"), bwd = named(evs, "backward"),
                 opt = named(evs, "optimizer"), stp = named(evs, "step"),
                 buckets = named(evs, "allreduce bucket "), waits = named(evs, "wait allreduce");
      ASSERT_EQ(fwd.size(), 1u);
      ASSERT_EQ(bwd.size(), 1u);
      ASSERT_EQ(opt.size(), 1u);
      ASSERT_EQ(stp.size(), 1u);
      EXPECT_EQ(waits.size(), 1u);
      EXPECT_EQ(named(evs, "data_wait").size(), 1u);
      EXPECT_EQ(stp[0].tid, 0);
      EXPECT_EQ(stp[0].args["epoch"], 1);
      EXPECT_EQ(stp[0].args["images"], kBatch);
      EXPECT_LE(fwd[0].end(), bwd[0].ts);
      EXPECT_LE(bwd[0].end(), opt[0].ts);
      ASSERT_EQ(buckets.size(), size_t(kSmallBucketCount));
      double bytes = 0, first_start = 1e300, first_ready = 1e300;
      int tensors = 0;
      for (const Ev& b : buckets) {
        EXPECT_EQ(b.cat, "comm");
        EXPECT_EQ(b.tid, 2);
        bytes += b.args["bytes"].get<double>();
        tensors += b.args["tensors"].get<int>();
        EXPECT_DOUBLE_EQ(b.args["launch_us"].get<double>(), b.ts);
        EXPECT_LE(b.args["ready_us"].get<double>(), b.ts + 1e-3);
        EXPECT_GE(b.ts, fwd[0].end());         // after this step's forward
        EXPECT_LE(b.end(), opt[0].ts + 1e-3);  // done before the optimizer step
        EXPECT_GE(b.ts, stp[0].ts);
        EXPECT_LE(b.end(), stp[0].end() + 1e-3);
        first_start = std::min(first_start, b.ts);
        first_ready = std::min(first_ready, b.args["ready_us"].get<double>());
      }
      EXPECT_DOUBLE_EQ(bytes, kArenaBytes);
      EXPECT_EQ(tensors, kTensors);
      // The overlap is real: the first bucket is ready, and its allreduce starts, while
      // backward still runs.
      EXPECT_GE(first_ready, bwd[0].ts);
      EXPECT_LT(first_ready, bwd[0].end());
      EXPECT_LT(first_start, bwd[0].end());
    }
  }
}

// The trace's comm and wait events are taken at the points CommStats measures in_flight_s and
// exposed_wait_s: over an epoch they add up to each rank's rank_R.jsonl record, in both epochs
// (neither holds the set-up broadcast: it precedes the trace's clock and epoch 1, and is in the
// final record's comm_outside_epochs_*).
TEST(TraceRun, CommAndWaitEventsAddUpToTheRanksMetrics) {
  ScopedTempDir dir("trace-run-metrics");
  const std::string out = dir.file("run");
  const auto r = run2(
      kJob + kSmallBuckets + " --epochs 2 --trace --set trace.steps=all --out " + out, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = test::read_trace((fs::path(out) / "trace.json").string());
  for (int epoch = 1; epoch <= 2; ++epoch)
    for (int rank = 0; rank < 2; ++rank) {
      double in_flight = 0, exposed = 0;
      for (const auto& e : j["traceEvents"]) {
        if (e["ph"] != "X" || e["pid"] != rank || !e["args"].contains("step")) continue;
        const int64_t step = e["args"]["step"];
        if (step < (epoch - 1) * kSteps || step >= epoch * kSteps) continue;
        if (e["cat"] == "comm") in_flight += e["dur"].get<double>() * 1e-6;
        if (e["cat"] == "wait") exposed += e["dur"].get<double>() * 1e-6;
      }
      nlohmann::json rec;
      std::istringstream in(slurp(fs::path(out) / fmt::format("rank_{}.jsonl", rank)));
      for (std::string line; std::getline(in, line);) {
        const auto l = nlohmann::json::parse(line);
        if (l.value("kind", "") == "rank_epoch" && l.value("epoch", 0) == epoch) rec = l;
      }
      ASSERT_FALSE(rec.is_null()) << "rank " << rank << ": no epoch " << epoch << " record";
      auto metric = [&](const char* a, const char* b) {
        return rec.contains(a) ? rec[a].get<double>() : rec.at(b).get<double>();
      };
      const double m_in_flight = metric("comm_in_flight_s", "in_flight_s");
      const double m_exposed = metric("comm_exposed_wait_s", "exposed_wait_s");
      EXPECT_GT(in_flight, 0);
      EXPECT_GT(exposed, 0);
      // Separate clock readings a few microseconds apart per event.
      EXPECT_NEAR(in_flight, m_in_flight, 2e-4 + 0.01 * m_in_flight) << "rank " << rank;
      EXPECT_NEAR(exposed, m_exposed, 2e-4 + 0.01 * m_exposed) << "rank " << rank;
    }
}

// Communication after an epoch's last step is counted in the same place by the trace and by
// metrics.jsonl: outside. DiLoCo with H = 2 stopped by max_steps = 3 takes its outer step at
// step 1 (inside the step) and, for the round that step 2 began, in finish_training, after the
// last step: that "outer gradient" has no args.step, starts after the last step event ends, and
// is in the final record's comm_outside_epochs_* beside the set-up broadcast, not in the epoch's
// comm_*. n = the parameters' bytes (the outer gradient is the parameter vector's shape, as is
// the broadcast); at P = 2: epoch comm_bytes = comm_wire_bytes = n (one ring allreduce,
// 2(P-1)/P n = n); outside: payload n (broadcast) + n (allreduce), wire (P-1)/P n + n = 1.5 n.
TEST(TraceRun, EndOfEpochCommunicationIsOutsideInTraceAndMetrics) {
  ScopedTempDir dir("trace-run-end-of-epoch");
  const std::string out = dir.file("run");
  const auto r = run2(
      "train --model mnist_cnn --data fashion-mnist --batch 256 --threads 1 --algo diloco "
      "--set diloco.H=2 --max-steps 3 --set data.train_limit=2048 --set data.test_limit=200 "
      "--set progress=off --trace --set trace.steps=all --out " +
          out,
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = by_rank_step(test::read_trace((fs::path(out) / "trace.json").string()));
  double n = 0;
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(named(ev.at({rank, 1}), "outer gradient").size(), 1u) << rank;
    for (int64_t step : {0, 2}) EXPECT_TRUE(named(ev.at({rank, step}), "outer gradient").empty());
    ASSERT_TRUE(ev.count({rank, -1})) << rank;
    const auto outside = named(ev.at({rank, -1}), "outer gradient");
    ASSERT_EQ(outside.size(), 1u) << rank;
    EXPECT_EQ(named(ev.at({rank, -1}), "wait outer gradient").size(), 1u);
    const auto last = named(ev.at({rank, 2}), "step");
    ASSERT_EQ(last.size(), 1u);
    EXPECT_GE(outside[0].ts, last[0].end() - 1e-3);  // after the last step ended
    const Ev in_step =
        named(ev.at({rank, 1}), "outer gradient")[0];  // a copy: named() returns a temporary
    n = in_step.args["bytes"].get<double>();
    EXPECT_GT(n, 4.0 * 18000);  // mnist_cnn's 18 k parameters and more
    EXPECT_EQ(in_step.args["wire_bytes"].get<double>(), n);
    EXPECT_EQ(outside[0].args["bytes"].get<double>(), n);
    EXPECT_EQ(outside[0].args["wire_bytes"].get<double>(), n);
  }
  std::vector<nlohmann::json> recs;
  std::istringstream in(slurp(fs::path(out) / "metrics.jsonl"));
  for (std::string line; std::getline(in, line);) recs.push_back(nlohmann::json::parse(line));
  int epochs = 0;
  for (const auto& rec : recs) {
    if (rec["kind"] == "epoch") {
      ++epochs;
      EXPECT_EQ(rec["comm_bytes"].get<double>(), n);
      EXPECT_EQ(rec["comm_wire_bytes"].get<double>(), n);
      EXPECT_EQ(rec["comm_allreduces"], 1);
    }
    if (rec["kind"] == "final") {
      EXPECT_EQ(rec["comm_outside_epochs_bytes"].get<double>(), 2 * n);
      EXPECT_EQ(rec["comm_outside_epochs_wire_bytes"].get<double>(), 1.5 * n);
      EXPECT_EQ(rec["comm_outside_epochs_allreduces"], 1);
    }
  }
  EXPECT_EQ(epochs, 1);
  // dplab trace: the same attribution, the outer step after the last step in the table apart.
  const auto t = test::run_dplab("trace " + out + " --json", dir.path / "t");
  ASSERT_EQ(t.status, 0) << t.err;
  const nlohmann::json s = nlohmann::json::parse(t.out);
  for (const auto& rank : s["ranks"]) {
    ASSERT_EQ(rank["operations"].size(), 1u) << rank.dump();
    EXPECT_EQ(rank["operations"][0]["name"], "outer gradient");
    EXPECT_EQ(rank["operations"][0]["events"], 1);
    EXPECT_DOUBLE_EQ(rank["operations"][0]["calls_per_step"].get<double>(), 1.0 / 3);
    ASSERT_EQ(rank["outside_steps"]["operations"].size(), 1u);
    EXPECT_EQ(rank["outside_steps"]["operations"][0]["name"], "outer gradient");
    EXPECT_EQ(rank["outside_steps"]["operations"][0]["wire_bytes"].get<double>(), n);
  }
}

TEST(TraceRun, BucketCapZeroIsOneAllreducePerTensor) {
  ScopedTempDir dir("trace-run-cap0");
  const std::string out = dir.file("run");
  const auto r =
      run2(kJob + " --set allreduce.bucket_cap_mb=0 --trace --set trace.steps=all --out " + out,
           dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = by_rank_step(test::read_trace((fs::path(out) / "trace.json").string()));
  for (int rank = 0; rank < 2; ++rank)
    for (int64_t step = 0; step < kSteps; ++step) {
      const auto buckets = named(ev.at({rank, step}), "allreduce bucket ");
      EXPECT_EQ(buckets.size(), size_t(kTensors)) << rank << " " << step;
      for (const Ev& b : buckets) EXPECT_EQ(b.args["tensors"], 1);
    }
}

TEST(TraceRun, RecordsOnlyTheWindowsSteps) {
  ScopedTempDir dir("trace-run-window");
  const std::string out = dir.file("run");
  // Two loader workers: their batches are events of the steps that consume them.
  const auto r =
      run2(kJob + " --set data.workers=2 --trace --set trace.steps=1:3 --out " + out, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = test::read_trace((fs::path(out) / "trace.json").string());
  EXPECT_EQ(j["otherData"]["steps"], "1:3");
  std::map<std::pair<int, int64_t>, int> loads;  // (rank, step) -> load batch events
  std::map<std::pair<int, int>, std::string> threads;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "thread_name")
      threads[std::make_pair(e["pid"].get<int>(), e["tid"].get<int>())] = e["args"]["name"];
    if (e["ph"] != "X" || e["name"] != "load batch") continue;
    EXPECT_EQ(e["cat"], "data");
    EXPECT_EQ(e["args"]["batch"], e["args"]["step"]);  // one epoch: batch number = step
    const int tid = e["tid"];
    EXPECT_EQ(tid, e["args"]["worker"].get<int>() == 0 ? 3 : 30 + e["args"]["worker"].get<int>());
    ++loads[{e["pid"].get<int>(), e["args"]["step"].get<int64_t>()}];
  }
  EXPECT_EQ(loads, (std::map<std::pair<int, int64_t>, int>{
                       {{0, 1}, 1}, {{0, 2}, 1}, {{1, 1}, 1}, {{1, 2}, 1}}));
  for (const auto& [key, n] : loads)
    EXPECT_EQ(threads[std::make_pair(key.first, 3)], "loader") << key.first;
  std::map<int64_t, int> steps;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "step")
      ++steps[e["args"]["step"].get<int64_t>()];
    else if (e["ph"] == "X" && e["name"] != "eval") {
      const int64_t s = e["args"]["step"];
      EXPECT_TRUE(s == 1 || s == 2) << e.dump();
    }
  EXPECT_EQ(steps, (std::map<int64_t, int>{{1, 2}, {2, 2}}));  // both ranks
}

// local SGD averages the parameters after every H = 2 steps: steps 1 and 3 of the 4.
TEST(TraceRun, LocalSgdParameterAveragesAppear) {
  ScopedTempDir dir("trace-run-localsgd");
  const std::string out = dir.file("run");
  const std::string job =
      "train --model mnist_cnn --data fashion-mnist --batch 64 --threads 1 "
      "--algo local_sgd --set local_sgd.H=2 --set data.train_limit=512 "
      "--set data.test_limit=200 --set progress=off";
  const auto r = run2(job + " --trace --set trace.steps=all --out " + out, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = by_rank_step(test::read_trace((fs::path(out) / "trace.json").string()));
  for (int rank = 0; rank < 2; ++rank)
    for (int64_t step = 0; step < kSteps; ++step) {
      const auto avg = named(ev.at({rank, step}), "parameter average");
      const auto wait = named(ev.at({rank, step}), "wait parameter average");
      const size_t expected = step % 2 == 1 ? 1 : 0;
      ASSERT_EQ(avg.size(), expected) << rank << " " << step;
      ASSERT_EQ(wait.size(), expected);
      if (expected) {
        EXPECT_EQ(avg[0].cat, "comm");
        EXPECT_EQ(avg[0].tid, 2);
        EXPECT_EQ(avg[0].args["bytes"].get<double>(), kArenaBytes);
        EXPECT_EQ(wait[0].cat, "wait");
        EXPECT_EQ(wait[0].tid, 1);
      }
      EXPECT_TRUE(named(ev.at({rank, step}), "allreduce bucket").empty());
    }
}

// SGP gossips after every step: one exchange of the parameters and the push-sum weight (one
// more float) with a peer, and the wait for it, per step and rank.
TEST(TraceRun, SgpGossipExchangesAppear) {
  ScopedTempDir dir("trace-run-sgp");
  const std::string out = dir.file("run");
  const std::string job =
      "train --model mnist_cnn --data fashion-mnist --batch 64 --threads 1 "
      "--algo sgp --set data.train_limit=512 --set data.test_limit=200 "
      "--set progress=off";
  const auto r = run2(job + " --trace --set trace.steps=all --out " + out, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = by_rank_step(test::read_trace((fs::path(out) / "trace.json").string()));
  for (int rank = 0; rank < 2; ++rank)
    for (int64_t step = 0; step < kSteps; ++step) {
      const auto& evs = ev.at({rank, step});
      const auto gossip = named(evs, "gossip exchange"), wait = named(evs, "wait gossip exchange");
      ASSERT_EQ(gossip.size(), 1u) << rank << " " << step;
      ASSERT_EQ(wait.size(), 1u);
      EXPECT_EQ(gossip[0].cat, "comm");
      EXPECT_EQ(gossip[0].tid, 2);
      EXPECT_EQ(gossip[0].args["bytes"].get<double>(), kArenaBytes + 4);
      EXPECT_EQ(wait[0].cat, "wait");
      // After this step's optimizer, inside its step event.
      const auto opt = named(evs, "optimizer"), stp = named(evs, "step");
      ASSERT_EQ(opt.size(), 1u);
      EXPECT_GE(gossip[0].ts, opt[0].end());
      EXPECT_LE(gossip[0].end(), stp[0].end() + 1e-3);
    }
}

// A run that stops in order (non-finite values, exit status 3: with lr 1e20 the second step's
// loss is no longer finite) still leaves complete per-rank files and the merged trace.
TEST(TraceRun, OrderlyStopClosesAndMergesTheTrace) {
  ScopedTempDir dir("trace-run-stop");
  const std::string out = dir.file("run");
  const auto r = run2(kJob + " --lr 1e20 --trace --set trace.steps=all --out " + out, dir.path);
  ASSERT_EQ(r.status, 3) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json f =
        test::read_trace((fs::path(out) / "trace" / fmt::format("rank_{}.json", rank)).string());
    test::check_trace_structure(f);
    EXPECT_GE(test::count_events(f, "forward"), 1u);
  }
  const nlohmann::json j = test::read_trace((fs::path(out) / "trace.json").string());
  test::check_trace_structure(j);
  EXPECT_EQ(test::count_events(j, "step", trace::kSteps) % 2, 0u);  // as many on both ranks
}

// Hierarchical GradSync (4 ranks as 2 nodes of 2): each bucket's three stages are comm_stage
// events nested inside its `allreduce bucket K`, in order.
TEST(TraceRun, HierarchicalBucketsHoldTheirStages) {
  ScopedTempDir dir("trace-run-hier");
  const std::string out = dir.file("run");
  const std::string job =
      "train --model mnist_cnn --data fashion-mnist --batch 64 --threads 1 "
      "--algo allreduce --ranks-per-node 2 --set allreduce.hierarchical=true "
      "--set data.train_limit=512 --set data.test_limit=200 "
      "--set progress=off";
  const auto r = test::run_dplab_mpi(
      4, job + kSmallBuckets + " --trace --set trace.steps=all --out " + out, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = test::read_trace((fs::path(out) / "trace.json").string());
  test::check_trace_structure(j);
  std::map<int, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
  EXPECT_TRUE(names[3].starts_with("rank 3 (node 1, ")) << names[3];
  const auto ev = by_rank_step(j);
  const char* stages[] = {"reduce_scatter (node)", "allreduce (cross)", "allgather (node)"};
  for (int rank = 0; rank < 4; ++rank)
    for (int64_t step = 0; step < 2; ++step) {  // 512 images / 4 ranks / 64: 2 steps
      const auto& evs = ev.at({rank, step});
      const auto buckets = named(evs, "allreduce bucket ");
      ASSERT_EQ(buckets.size(), size_t(kSmallBucketCount)) << rank << " " << step;
      for (const Ev& b : buckets) {
        const int k = b.args["bucket"];
        double last_end = b.ts;
        for (const char* st : stages) {
          const auto v = named(evs, fmt::format("bucket {} {}", k, st));
          ASSERT_EQ(v.size(), 1u) << st;
          EXPECT_EQ(v[0].cat, "comm_stage");
          EXPECT_GE(v[0].ts, last_end - 1e-3) << st;
          EXPECT_LE(v[0].end(), b.end() + 1e-3) << st;
          last_end = v[0].end();
        }
      }
    }
}

// The trace options are not part of the trajectory: a run resumed with --trace continues, and
// its trace numbers the steps globally (epoch 2 of 2: steps 4 to 7).
TEST(TraceRun, ResumedRunTracesItsGlobalSteps) {
  ScopedTempDir dir("trace-run-resume");
  const std::string out = dir.file("run");
  auto r = run2(kJob + " --out " + out, dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run2(kJob + " --epochs 2 --resume " + out +
               " --resume-override epochs --trace --set "
               "trace.steps=all --out " +
               out,
           dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = test::read_trace((fs::path(out) / "trace.json").string());
  std::map<int64_t, int> steps;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "step") {
      ++steps[e["args"]["step"].get<int64_t>()];
      EXPECT_EQ(e["args"]["epoch"], 2);
    }
  EXPECT_EQ(steps, (std::map<int64_t, int>{{4, 2}, {5, 2}, {6, 2}, {7, 2}}));
}

TEST(TraceRun, RefusesBadOptions) {
  ScopedTempDir dir("trace-run-bad");
  const std::string job =
      "train --model mnist_cnn --data fashion-mnist --batch 64 --threads 1 "
      "--set data.train_limit=128 --set data.test_limit=100 --set progress=off";
  auto r = test::run_dplab(job + " --trace", dir.path / "a");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("option trace: needs an output directory"), std::string::npos) << r.err;
  r = test::run_dplab(job + " --set trace.steps=5:2", dir.path / "b");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("option trace.steps"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dplab
