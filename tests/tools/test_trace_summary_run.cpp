// `dplab trace` on a recorded trace (issue #17, item 8): `mpiexec -n 2 dplab train --trace`
// writes one, and every figure of `dplab trace --json` equals what trace_reference.h computes
// itself from trace.json (no code shared with tools/trace); the figure command draws it.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "data/temp_dir.h"
#include "run_cli.h"
#include "trace_reference.h"

namespace dplab {
namespace {

using nlohmann::json;
using test::ScopedTempDir;

// 512 training images: 4 steps of 64 per rank on two ranks; steps 1 to 3 traced. Buckets of
// 0.01 MiB split mnist_cnn's gradients into 3 buckets.
const std::string kJob =
    "train --model mnist_cnn --data fashion-mnist --batch 64 --threads 1 --algo allreduce "
    "--set data.train_limit=512 --set data.test_limit=200 --set progress=off "
    "--set allreduce.first_bucket_mb=0.01 --set allreduce.bucket_cap_mb=0.01 "
    "--trace --set trace.steps=1:4";

void expect_close(const json& got, double want, const std::string& what) {
  ASSERT_TRUE(got.is_number()) << what << ": " << got.dump();
  EXPECT_NEAR(got.get<double>(), want, 1e-9 * std::abs(want) + 1e-12) << what;
}

TEST(TraceSummaryRun, FiguresEqualTheTestsOwnComputationFromTheJson) {
  ScopedTempDir dir("trace-summary-run");
  const auto out = dir.path / "run";
  const auto train = test::run_dplab_mpi(2, kJob + " --out " + out.string(), dir.path / "train",
                                         "OMP_NUM_THREADS=1");
  ASSERT_EQ(train.status, 0) << train.err;
  const json doc = json::parse(test::slurp(out / "trace.json"));
  const auto ref = test::reference_sums(doc);

  const auto r = test::run_dplab("trace " + out.string() + " --json", dir.path / "summary");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["window"], "1:4");
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["steps_found"], 3);
  EXPECT_EQ(j["first_step"], 1);
  EXPECT_EQ(j["last_step"], 3);
  ASSERT_EQ(j["ranks"].size(), 2u);
  ASSERT_EQ(ref.size(), 2u);

  double mean[5] = {}, fastest = 1e300, slowest = 0;
  int slowest_rank = -1;
  for (const json& rank : j["ranks"]) {
    const test::RefRank& x = ref.at(rank["rank"].get<int>());
    SCOPED_TRACE(fmt::format("rank {}", rank["rank"].get<int>()));
    ASSERT_EQ(x.steps, 3);
    EXPECT_EQ(rank["steps"], 3);
    const double n = x.steps, s = 1e-6;  // per-step means, us -> s
    const double figures[5] = {x.step / n, x.compute / n, x.data_wait / n, x.in_flight / n,
                               x.exposed / n};
    const char* keys[5] = {"step_time_s", "compute_s", "data_wait_s", "comm_in_flight_s",
                           "exposed_wait_s"};
    for (int k = 0; k < 5; ++k) {
      expect_close(rank[keys[k]], figures[k] * s, keys[k]);
      mean[k] += figures[k] / 2;
    }
    ASSERT_GT(x.in_flight, 0);
    expect_close(rank["overlap"], 1 - x.exposed / x.in_flight, "overlap");
    // Every communication operation; here GradSync's 3 buckets ("allreduce bucket K").
    ASSERT_EQ(rank["operations"].size(), x.ops.size());
    ASSERT_EQ(x.buckets.size(), 3u);
    int buckets = 0;
    for (const json& b : rank["operations"]) {
      const test::RefOp& o = x.ops.at(b["name"].get<std::string>());
      SCOPED_TRACE(b["name"].get<std::string>());
      EXPECT_EQ(b["events"], o.n);
      expect_close(b["duration_s"], o.dur / o.n * s, "duration_s");
      expect_close(b["in_flight_per_step_s"], o.dur / n * s, "in_flight_per_step_s");
      expect_close(b["bytes"], o.bytes / o.n, "bytes");
      if (o.wire_all) {
        expect_close(b["wire_bytes"], o.wire / o.n, "wire_bytes");
        expect_close(b["wire_bandwidth_bytes_per_s"], o.wire / (o.dur * s),
                     "wire_bandwidth_bytes_per_s");
      } else {  // a writer without args.wire_bytes: nothing derived
        EXPECT_TRUE(b["wire_bytes"].is_null());
        EXPECT_TRUE(b["wire_bandwidth_bytes_per_s"].is_null());
      }
      if (b["bucket"].is_null()) continue;
      ++buckets;
      const test::RefBucket& y = x.buckets.at(b["bucket"].get<int>());
      EXPECT_EQ(b["events"], 3);
      EXPECT_EQ(y.n, 3);
      expect_close(b["ready_to_launch_s"], y.delay / y.n * s, "ready_to_launch_s");
    }
    EXPECT_EQ(buckets, 3);
    fastest = std::min(fastest, x.step / n);
    if (x.step / n > slowest) slowest = x.step / n, slowest_rank = rank["rank"].get<int>();
  }
  const json& m = j["mean_over_ranks"];
  expect_close(m["step_time_s"], mean[0] * 1e-6, "mean step_time_s");
  expect_close(m["compute_s"], mean[1] * 1e-6, "mean compute_s");
  expect_close(m["data_wait_s"], mean[2] * 1e-6, "mean data_wait_s");
  expect_close(m["comm_in_flight_s"], mean[3] * 1e-6, "mean comm_in_flight_s");
  expect_close(m["exposed_wait_s"], mean[4] * 1e-6, "mean exposed_wait_s");
  expect_close(m["overlap"], 1 - mean[4] / mean[3], "mean overlap");
  EXPECT_EQ(j["slowest_rank"], slowest_rank);
  expect_close(j["skew"], (slowest - fastest) / mean[0], "skew");

  const auto fig = test::run_dplab(
      "trace " + out.string() + " --out " + (dir.path / "t.pdf").string(), dir.path / "figure");
  ASSERT_EQ(fig.status, 0) << fig.err;
  EXPECT_EQ(test::slurp(dir.path / "t.pdf").substr(0, 5), "%PDF-");
}

// The summary agrees with metrics.jsonl's figures for the same steps: every rank's step records
// (metrics.every_steps = 1, rank_R.jsonl) of the traced steps against dplab trace's means. Both
// time the same intervals with their own clock reads, a few statements apart (the step: from
// the batch request to the end of after_step, against the time between two step ends; the
// waits: the same calls), so they differ by those statements and by a rare context switch
// between the reads on a loaded machine: up to a scheduler slice, a few ms. The tolerance,
// 2 ms + 2 %, is far below what a wrong definition or unit gives (a step of ~30 ms counted in
// ms or per window, the data wait counted in the step, a wait counted twice).
TEST(TraceSummaryRun, AgreesWithTheStepRecordsOfTheSameSteps) {
  ScopedTempDir dir("trace-summary-metrics");
  const auto out = dir.path / "run";
  const auto train =
      test::run_dplab_mpi(2, kJob + " --set metrics.every_steps=1 --out " + out.string(),
                          dir.path / "train", "OMP_NUM_THREADS=1");
  ASSERT_EQ(train.status, 0) << train.err;
  const auto r = test::run_dplab("trace " + out.string() + " --json", dir.path / "summary");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  for (const json& rank : j["ranks"]) {
    const int R = rank["rank"].get<int>();
    SCOPED_TRACE(fmt::format("rank {}", R));
    // Step records of global steps 1, 2 and 3 (0-based; a record's "step" counts steps done).
    double step = 0, data = 0, exposed = 0;
    int found = 0;
    std::istringstream lines(test::slurp(out / fmt::format("rank_{}.jsonl", R)));
    for (std::string line; std::getline(lines, line);) {
      const json rec = json::parse(line);
      if (rec["kind"] != "step" || rec["step"] < 2 || rec["step"] > 4) continue;
      ASSERT_EQ(rec["window_steps"], 1);
      step += rec["step_time_s"].get<double>() / 3;
      data += rec["data_wait_s"].get<double>() / 3;
      exposed += rec["comm_exposed_wait_s"].get<double>() / 3;
      ++found;
    }
    ASSERT_EQ(found, 3);
    auto near = [](const json& got, double want, const char* what) {
      ASSERT_TRUE(got.is_number()) << what;
      EXPECT_NEAR(got.get<double>(), want, 2e-3 + 0.02 * want) << what;
    };
    near(rank["step_time_s"], step, "step_time_s");
    near(rank["data_wait_s"], data, "data_wait_s");
    near(rank["exposed_wait_s"], exposed, "exposed_wait_s");
    EXPECT_GT(step, 0);
  }
}

}  // namespace
}  // namespace dplab
