// dplab trace's reading and arithmetic (tools/trace): hand-built traces whose figures are
// worked out by hand (trace_fixture.h), random traces against an independent computation
// (trace_reference.h), and the errors a broken trace gives.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "dplab/core/error.h"
#include "dplab/tools/trace/trace_file.h"
#include "dplab/tools/trace/trace_summary.h"
#include "dplab/train/config/config.h"  // UsageError
#include "trace_fixture.h"
#include "trace_reference.h"

namespace dplab {
namespace {

using nlohmann::json;
using test::bucket_event;
using test::trace_doc;
using test::x_event;
using trace::parse_trace;
using trace::summarize;
using trace::TraceSummary;

TraceSummary summary_of(const json& doc) {
  return summarize(parse_trace(doc.dump(), "t.json"));
}

std::string error_of(const std::string& text) {
  try {
    summarize(parse_trace(text, "t.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TraceSummary, TwoRanksGiveTheHandValues) {
  const TraceSummary s = summary_of(test::two_rank_trace());
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.window, "10:13");
  EXPECT_EQ(s.steps_found, 3);
  EXPECT_EQ(s.first_step, 10);
  EXPECT_EQ(s.last_step, 12);
  ASSERT_EQ(s.ranks.size(), 2u);
  const auto& r0 = s.ranks[0].f;
  const auto& r1 = s.ranks[1].f;
  EXPECT_EQ(s.ranks[0].name, "rank 0 (node 0, hostA)");
  EXPECT_EQ(r0.steps, 3);
  EXPECT_DOUBLE_EQ(r0.step_us, 10000);
  EXPECT_DOUBLE_EQ(r0.forward_us, 3000);
  EXPECT_DOUBLE_EQ(r0.backward_us, 5000);
  EXPECT_DOUBLE_EQ(r0.optimizer_us, 1000);
  EXPECT_DOUBLE_EQ(r0.compute_us, 9000);
  EXPECT_DOUBLE_EQ(r0.data_wait_us, 500);
  EXPECT_DOUBLE_EQ(r0.in_flight_us, 4000);  // overlapping buckets counted once, GPU track out
  EXPECT_DOUBLE_EQ(r0.exposed_us, 500);
  ASSERT_TRUE(r0.overlap.has_value());
  EXPECT_DOUBLE_EQ(*r0.overlap, 0.875);
  // The buckets are operations "allreduce bucket K", by index; wire bytes = payload at P = 2.
  ASSERT_EQ(r0.operations.size(), 2u);
  const auto& b00 = r0.operations[0];
  EXPECT_EQ(b00.name, "allreduce bucket 0");
  EXPECT_EQ(b00.bucket, 0);
  EXPECT_EQ(b00.events, 3);
  EXPECT_DOUBLE_EQ(b00.calls_per_step, 1);
  EXPECT_DOUBLE_EQ(*b00.delay_us, 200);
  EXPECT_DOUBLE_EQ(b00.duration_us, 2000);
  EXPECT_DOUBLE_EQ(b00.per_step_us, 2000);
  EXPECT_DOUBLE_EQ(b00.total_us, 6000);
  EXPECT_DOUBLE_EQ(*b00.bytes, 4e6);
  EXPECT_DOUBLE_EQ(*b00.wire_bytes, 4e6);
  EXPECT_DOUBLE_EQ(*b00.bandwidth_Bps, 2e9);
  EXPECT_EQ(r0.operations[1].name, "allreduce bucket 1");
  EXPECT_DOUBLE_EQ(*r0.operations[1].delay_us, 500);
  EXPECT_DOUBLE_EQ(r0.operations[1].duration_us, 2500);
  EXPECT_DOUBLE_EQ(*r0.operations[1].bandwidth_Bps, 4e8);
  EXPECT_TRUE(r0.outside.operations.empty());

  EXPECT_DOUBLE_EQ(r1.step_us, 13000);
  EXPECT_DOUBLE_EQ(r1.compute_us, 10000);
  EXPECT_DOUBLE_EQ(r1.data_wait_us, 1000);
  EXPECT_DOUBLE_EQ(r1.in_flight_us, 4000);
  EXPECT_DOUBLE_EQ(r1.exposed_us, 300);
  EXPECT_DOUBLE_EQ(*r1.overlap, 0.925);
  EXPECT_DOUBLE_EQ(*r1.operations[0].delay_us, 100);
  EXPECT_NEAR(*r1.operations[0].bandwidth_Bps, 4e6 / 3e-3, 1);
  EXPECT_DOUBLE_EQ(*r1.operations[1].delay_us, 300);
  EXPECT_DOUBLE_EQ(*r1.operations[1].bandwidth_Bps, 1e9);

  EXPECT_DOUBLE_EQ(s.mean.step_us, 11500);
  EXPECT_DOUBLE_EQ(s.mean.compute_us, 9500);
  EXPECT_DOUBLE_EQ(s.mean.forward_us, 3500);
  EXPECT_DOUBLE_EQ(s.mean.data_wait_us, 750);
  EXPECT_DOUBLE_EQ(s.mean.in_flight_us, 4000);
  EXPECT_DOUBLE_EQ(s.mean.exposed_us, 400);
  EXPECT_DOUBLE_EQ(*s.mean.overlap, 0.9);
  ASSERT_EQ(s.mean.operations.size(), 2u);
  EXPECT_EQ(s.mean.operations[0].events, 6);  // 3 per rank
  EXPECT_DOUBLE_EQ(*s.mean.operations[0].delay_us, 150);
  EXPECT_DOUBLE_EQ(s.mean.operations[0].duration_us, 2500);
  EXPECT_DOUBLE_EQ(*s.mean.operations[0].bandwidth_Bps, 1.6e9);
  EXPECT_DOUBLE_EQ(*s.mean.operations[1].delay_us, 400);
  EXPECT_DOUBLE_EQ(s.mean.operations[1].duration_us, 1750);
  EXPECT_NEAR(*s.mean.operations[1].bandwidth_Bps, 1e6 / 1.75e-3, 1e-3);
  EXPECT_EQ(s.time_base, "wall");
  EXPECT_EQ(s.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(s.skew, 3000.0 / 11500.0);
}

// Every communication event is in the per-operation table, by name, with its payload and wire
// bytes and a bandwidth from the wire bytes (trace_fixture.h operations_trace has the hand
// values); the events after the last step (no args.step) are outside the steps.
TEST(TraceSummary, EveryOperationHasItsHandValues) {
  const TraceSummary s = summary_of(test::operations_trace());
  ASSERT_EQ(s.ranks.size(), 4u);
  for (const auto& r : s.ranks) {
    SCOPED_TRACE(r.rank);
    const double D = 500.0 * (r.rank + 1);
    EXPECT_DOUBLE_EQ(r.f.in_flight_us, 2700 + D / 2);
    EXPECT_DOUBLE_EQ(r.f.exposed_us, D / 2);
    EXPECT_DOUBLE_EQ(r.f.compute_us, 8000);  // the eval after the steps is not a step's
    ASSERT_EQ(r.f.operations.size(), 4u);    // by name
    const auto& bc = r.f.operations[0];
    EXPECT_EQ(bc.name, "broadcast");
    EXPECT_EQ(bc.events, 1);
    EXPECT_DOUBLE_EQ(bc.calls_per_step, 0.5);
    EXPECT_DOUBLE_EQ(bc.duration_us, 400);
    EXPECT_DOUBLE_EQ(bc.per_step_us, 200);
    EXPECT_DOUBLE_EQ(*bc.bytes, 8e5);
    EXPECT_DOUBLE_EQ(*bc.wire_bytes, 6e5);
    EXPECT_DOUBLE_EQ(*bc.bandwidth_Bps, 1.5e9);  // wire bytes, not the payload's 2e9
    EXPECT_FALSE(bc.delay_us.has_value());
    const auto& daso = r.f.operations[1];
    EXPECT_EQ(daso.name, "daso global sync");
    EXPECT_DOUBLE_EQ(daso.duration_us, 1000);
    EXPECT_DOUBLE_EQ(*daso.bytes, 2e6);
    EXPECT_FALSE(daso.wire_bytes.has_value());  // not in the trace: not invented
    EXPECT_FALSE(daso.bandwidth_Bps.has_value());
    const auto& gossip = r.f.operations[2];
    EXPECT_EQ(gossip.name, "gossip exchange");
    EXPECT_EQ(gossip.events, 2);
    EXPECT_DOUBLE_EQ(gossip.calls_per_step, 1);
    EXPECT_DOUBLE_EQ(gossip.per_step_us, 2000);
    EXPECT_DOUBLE_EQ(*gossip.bandwidth_Bps, 0.5e9);
    const auto& outer = r.f.operations[3];
    EXPECT_EQ(outer.name, "outer gradient");
    EXPECT_DOUBLE_EQ(outer.duration_us, D);
    EXPECT_DOUBLE_EQ(outer.per_step_us, D / 2);
    EXPECT_DOUBLE_EQ(*outer.bytes, 4e6);
    EXPECT_DOUBLE_EQ(*outer.wire_bytes, 6e6);
    EXPECT_DOUBLE_EQ(*outer.bandwidth_Bps, 6e6 / (D * 1e-6));
    ASSERT_EQ(r.f.outside.operations.size(), 1u);
    const auto& fin = r.f.outside.operations[0];
    EXPECT_EQ(fin.name, "final average");
    EXPECT_EQ(fin.events, 1);
    EXPECT_DOUBLE_EQ(fin.duration_us, 1000);
    EXPECT_DOUBLE_EQ(fin.total_us, 1000);
    EXPECT_DOUBLE_EQ(fin.calls_per_step, 0);
    EXPECT_DOUBLE_EQ(*fin.wire_bytes, 6e6);
    EXPECT_DOUBLE_EQ(*fin.bandwidth_Bps, 6e9);
    EXPECT_DOUBLE_EQ(r.f.outside.exposed_us, 1000);
  }
  EXPECT_DOUBLE_EQ(s.ranks[0].f.operations[3].bandwidth_Bps.value(), 12e9);
  EXPECT_DOUBLE_EQ(s.ranks[3].f.operations[3].bandwidth_Bps.value(), 3e9);
  const auto& m = s.mean.operations[3];
  EXPECT_EQ(m.name, "outer gradient");
  EXPECT_EQ(m.events, 4);
  EXPECT_DOUBLE_EQ(m.duration_us, 1250);
  EXPECT_DOUBLE_EQ(m.per_step_us, 625);
  EXPECT_DOUBLE_EQ(*m.bandwidth_Bps, 4.8e9);  // mean wire / mean duration
  EXPECT_EQ(s.mean.operations[2].events, 8);
  EXPECT_DOUBLE_EQ(s.mean.in_flight_us, 3325);
  EXPECT_DOUBLE_EQ(s.mean.exposed_us, 625);
  EXPECT_DOUBLE_EQ(*s.mean.overlap, 1 - 625.0 / 3325.0);
  EXPECT_DOUBLE_EQ(s.mean.outside.exposed_us, 1000);
  EXPECT_EQ(s.mean.outside.operations.at(0).events, 4);

  // The same rows in the table (per call in ms, MB, GB/s) and in the JSON (s, bytes, bytes/s).
  const std::string text = trace::format_summary(s);
  EXPECT_NE(text.find("communication by operation"), std::string::npos) << text;
  EXPECT_NE(text.find("wire bandwidth"), std::string::npos);
  EXPECT_NE(text.find("wall time"), std::string::npos);
  const nlohmann::json j = trace::summary_json(s);
  EXPECT_EQ(j["time_base"], "wall");
  const json& daso = j["ranks"][0]["operations"][1];
  EXPECT_EQ(daso["name"], "daso global sync");
  EXPECT_TRUE(daso["bucket"].is_null());
  EXPECT_TRUE(daso["wire_bytes"].is_null());
  EXPECT_TRUE(daso["wire_bandwidth_bytes_per_s"].is_null());
  EXPECT_TRUE(daso["ready_to_launch_s"].is_null());
  EXPECT_DOUBLE_EQ(daso["bytes"].get<double>(), 2e6);
  const json& outer = j["mean_over_ranks"]["operations"][3];
  EXPECT_DOUBLE_EQ(outer["duration_s"].get<double>(), 1.25e-3);
  EXPECT_DOUBLE_EQ(outer["in_flight_per_step_s"].get<double>(), 6.25e-4);
  EXPECT_DOUBLE_EQ(outer["calls_per_step"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(outer["wire_bytes"].get<double>(), 6e6);
  EXPECT_DOUBLE_EQ(outer["wire_bandwidth_bytes_per_s"].get<double>(), 4.8e9);
  const json& fin = j["ranks"][1]["outside_steps"];
  EXPECT_DOUBLE_EQ(fin["exposed_wait_s"].get<double>(), 1e-3);
  EXPECT_EQ(fin["operations"][0]["name"], "final average");
  EXPECT_DOUBLE_EQ(fin["operations"][0]["in_flight_total_s"].get<double>(), 1e-3);
  EXPECT_FALSE(fin["operations"][0].contains("calls_per_step"));
}

// A trace written before wire bytes were recorded: payload and times as before, wire bytes and
// the bandwidth (which needs them) "n/a" / null.
TEST(TraceSummary, WithoutWireBytesTheBandwidthIsNotAvailable) {
  json doc = test::two_rank_trace();
  for (auto& e : doc["traceEvents"])
    if (e.contains("args")) e["args"].erase("wire_bytes");
  const TraceSummary s = summary_of(doc);
  const auto& b = s.ranks[0].f.operations[0];
  EXPECT_DOUBLE_EQ(*b.bytes, 4e6);
  EXPECT_DOUBLE_EQ(b.duration_us, 2000);
  EXPECT_FALSE(b.wire_bytes.has_value());
  EXPECT_FALSE(b.bandwidth_Bps.has_value());
  EXPECT_FALSE(s.mean.operations[0].bandwidth_Bps.has_value());
  const std::string text = trace::format_summary(s);
  EXPECT_NE(text.find("n/a"), std::string::npos) << text;
  EXPECT_TRUE(trace::summary_json(s)["mean_over_ranks"]["operations"][0]["wire_bytes"].is_null());
}

// A trace on a virtual cluster's clock (otherData.time_base, or for an older trace the words of
// otherData.clock) is summarised as virtual time everywhere: no "wall time" label.
TEST(TraceSummary, AVirtualTimeTraceIsVirtualEverywhere) {
  json older = test::operations_trace();
  older["otherData"]["clock"] =
      "microseconds of virtual time (option cluster) after rank 0's time origin";
  for (const json& doc : {test::operations_trace("virtual:testlab"), older}) {
    const TraceSummary s = summary_of(doc);
    EXPECT_TRUE(s.virtual_time());
    const std::string text = trace::format_summary(s);
    EXPECT_EQ(text.find("wall"), std::string::npos) << text;
    EXPECT_NE(text.find("per step, mean over the window's steps, virtual time in ms"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("communication by operation, means over the window's steps, virtual "
                        "time"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("communication outside the steps"), std::string::npos);
    const json j = trace::summary_json(s);
    EXPECT_EQ(j["units"].get<std::string>().find("wall"), std::string::npos);
    EXPECT_NE(j["units"].get<std::string>().find("virtual time"), std::string::npos);
    // The figures are the same numbers: only the label differs.
    EXPECT_DOUBLE_EQ(s.mean.in_flight_us, 3325);
  }
  EXPECT_EQ(summary_of(test::operations_trace("virtual:testlab")).time_base, "virtual:testlab");
  EXPECT_EQ(summary_of(older).time_base, "virtual");
  EXPECT_NE(trace::format_summary(summary_of(test::operations_trace("virtual:testlab")))
                .find("time base: virtual:testlab"),
            std::string::npos);
}

TEST(TraceSummary, UnionCountsOverlappingCommunicationOnce) {
  // [0,100) holds [20,50); [80,150) overlaps it; [150,160) touches; [200,210) apart:
  // [0,160) + [200,210) = 170.
  EXPECT_DOUBLE_EQ(trace::union_length_us({{80, 150}, {0, 100}, {20, 50}, {150, 160}, {200, 210}}),
                   170);
  EXPECT_DOUBLE_EQ(trace::union_length_us({}), 0);
  EXPECT_DOUBLE_EQ(trace::union_length_us({{5, 5}}), 0);
}

json one_rank_steps(bool comm_in_first) {
  json ev = json::array();
  for (long s = 0; s < 2; ++s) {
    const double b = 1000.0 * s;
    ev.push_back(x_event("step", "step", 0, 0, b, 1000, {{"step", s}}));
    ev.push_back(x_event("forward", "compute", 0, 1, b, 400, {{"step", s}}));
    ev.push_back(x_event("backward", "compute", 0, 1, b + 400, 500, {{"step", s}}));
    ev.push_back(x_event("optimizer", "compute", 0, 1, b + 900, 100, {{"step", s}}));
  }
  if (comm_in_first) {
    ev.push_back(x_event("broadcast", "comm", 0, 2, 500, 300, {{"step", 0}, {"bytes", 10}}));
    ev.push_back(x_event("wait broadcast", "wait", 0, 1, 800, 60, {{"step", 0}}));
  }
  return trace_doc(ev, 1, "0:2");
}

TEST(TraceSummary, NothingInFlightMeansNoOverlap) {
  const TraceSummary s = summary_of(one_rank_steps(false));
  EXPECT_DOUBLE_EQ(s.ranks[0].f.in_flight_us, 0);
  EXPECT_FALSE(s.ranks[0].f.overlap.has_value());
  EXPECT_FALSE(s.mean.overlap.has_value());
  EXPECT_TRUE(trace::summary_json(s)["ranks"][0]["overlap"].is_null());
  EXPECT_NE(trace::format_summary(s).find("n/a"), std::string::npos);
  EXPECT_TRUE(s.ranks[0].f.operations.empty());
  EXPECT_DOUBLE_EQ(s.skew, 0);  // one rank
}

TEST(TraceSummary, OverlapIsFormedFromTheWindowsSums) {
  // Step 0: 300 us in flight, 60 exposed; step 1: none. Per step: 150 and 30; overlap
  // 1 - 60 / 300 = 0.8 (not a mean of per-step overlaps, which has no value for step 1).
  const TraceSummary s = summary_of(one_rank_steps(true));
  EXPECT_DOUBLE_EQ(s.ranks[0].f.in_flight_us, 150);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.exposed_us, 30);
  EXPECT_DOUBLE_EQ(*s.ranks[0].f.overlap, 0.8);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.compute_us, 1000);
  // Its one broadcast (args.bytes 10, no args.wire_bytes): 0.5 calls per step, 300 us.
  ASSERT_EQ(s.ranks[0].f.operations.size(), 1u);
  const auto& b = s.ranks[0].f.operations[0];
  EXPECT_EQ(b.name, "broadcast");
  EXPECT_EQ(b.bucket, -1);
  EXPECT_DOUBLE_EQ(b.calls_per_step, 0.5);
  EXPECT_DOUBLE_EQ(b.duration_us, 300);
  EXPECT_DOUBLE_EQ(b.per_step_us, 150);
  EXPECT_DOUBLE_EQ(*b.bytes, 10);
  EXPECT_FALSE(b.wire_bytes.has_value());
  EXPECT_FALSE(b.bandwidth_Bps.has_value());
  EXPECT_FALSE(b.delay_us.has_value());
}

TEST(TraceSummary, SlowestRankAndSkewAcrossThreeRanks) {
  json ev = json::array();
  const double durs[] = {10000, 14000, 12000};  // mean 12000: skew (14 - 10) / 12
  for (int r = 0; r < 3; ++r)
    for (long s = 4; s < 6; ++s)
      ev.push_back(x_event("step", "step", r, 0, (s - 4) * durs[r], durs[r], {{"step", s}}));
  const TraceSummary s = summary_of(trace_doc(ev, 3, "4:6"));
  EXPECT_EQ(s.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(s.skew, 4000.0 / 12000.0);
  EXPECT_EQ(s.ranks.size(), 3u);
  EXPECT_EQ(s.steps_found, 2);
}

TEST(TraceSummary, EventsOfAStepThatNeverEndedAreLeftOut) {
  json doc = test::two_rank_trace();
  // A stopped run: rank 0 began step 13 (forward, a bucket) but wrote no step event for it.
  doc["traceEvents"].push_back(x_event("forward", "compute", 0, 1, 30000, 99999, {{"step", 13}}));
  doc["traceEvents"].push_back(bucket_event(0, 0, 13, 31000, 99999, 30500, 1));
  const TraceSummary s = summary_of(doc);
  EXPECT_EQ(s.ranks[0].incomplete_events, 2);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.compute_us, 9000);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.operations[0].duration_us, 2000);
  EXPECT_NE(trace::format_summary(s).find("rank 0: 2 events of steps without a step event"),
            std::string::npos);
}

// Loader workers' `load batch` events (cat data; worker 0 on tid 3, worker w on tid 30 + w)
// prefetch, also for steps past the window: neither data wait nor a step left unfinished.
TEST(TraceSummary, LoaderWorkersAreNotTheStepsDataWait) {
  json doc = test::two_rank_trace();
  for (auto [tid, step] : {std::pair{3, 10L}, std::pair{31, 11L}, std::pair{3, 13L}})
    doc["traceEvents"].push_back(x_event("load batch", "data", 0, tid, 100.0 * step, 4000,
                                         {{"step", step}, {"worker", tid % 30}}));
  const TraceSummary s = summary_of(doc);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.data_wait_us, 500);
  EXPECT_DOUBLE_EQ(s.ranks[0].f.step_us, 10000);
  EXPECT_EQ(s.ranks[0].incomplete_events, 0);
}

// Random traces: overlapping and disjoint communication, steps without any, three ranks of
// different speeds; every figure against trace_reference.h's independent computation.
TEST(TraceSummary, RandomTracesAgreeWithAnIndependentComputation) {
  std::mt19937 rng(17);
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  for (int trial = 0; trial < 20; ++trial) {
    json ev = json::array();
    const int ranks = 1 + trial % 3;
    for (int r = 0; r < ranks; ++r) {
      double t = uni(0, 50);
      for (long s = 3; s < 8; ++s) {
        const double len = uni(500, 2000);
        ev.push_back(x_event("step", "step", r, 0, t, len, {{"step", s}}));
        ev.push_back(x_event("data_wait", "data", r, 1, t, uni(0, 50), {{"step", s}}));
        for (const char* n : {"forward", "backward", "optimizer"})
          ev.push_back(x_event(n, "compute", r, 1, t + uni(0, len), uni(0, 300), {{"step", s}}));
        const int comms = int(uni(0, 5));  // 0: a step with nothing in flight
        for (int k = 0; k < comms; ++k) {
          const double ts = t + uni(0, len);
          ev.push_back(
              bucket_event(r, k, s, ts, uni(1, 400), ts - uni(0, 100), uni(1, 1e6), uni(1, 2e6)));
          ev.push_back(x_event("wait allreduce", "wait", r, 1, ts, uni(0, 20), {{"step", s}}));
        }
        // Algorithms' operations by name, some without args.wire_bytes (an older writer).
        const char* names[] = {"outer gradient", "gossip exchange", "broadcast"};
        const int ops = int(uni(0, 4));
        for (int k = 0; k < ops; ++k) {
          const double ts = t + uni(0, len);
          const double wire = trial % 4 == 3 && k == 0 ? -1 : uni(0, 3e6);
          ev.push_back(
              test::comm_event(names[int(uni(0, 3))], r, s, ts, uni(1, 900), uni(0, 1e6), wire));
        }
        t += len;
      }
      // After the last step (the end of an epoch): no args.step.
      const int after = int(uni(0, 3));
      for (int k = 0; k < after; ++k) {
        const double dur = uni(1, 500);
        ev.push_back(test::comm_event(k % 2 ? "final average" : "buffer average", r, -1, t + 10 * k,
                                      dur, uni(0, 1e6), uni(0, 2e6)));
        ev.push_back(test::wait_event("final average", r, -1, t + 10 * k, dur));
      }
    }
    const json doc = trace_doc(ev, ranks, "3:8");
    const TraceSummary s = summary_of(doc);
    const auto ref = test::reference_sums(doc);
    ASSERT_EQ(s.ranks.size(), ref.size());
    double fastest = 1e300, slowest = 0, mean_step = 0;
    int slowest_rank = -1;
    for (const auto& r : s.ranks) {
      const test::RefRank& x = ref.at(r.rank);
      const double n = x.steps;
      SCOPED_TRACE(fmt::format("trial {} rank {}", trial, r.rank));
      EXPECT_EQ(r.f.steps, x.steps);
      EXPECT_NEAR(r.f.step_us, x.step / n, 1e-9 * x.step);
      EXPECT_NEAR(r.f.compute_us, x.compute / n, 1e-9 * x.step);
      EXPECT_NEAR(r.f.data_wait_us, x.data_wait / n, 1e-9 * x.step);
      EXPECT_NEAR(r.f.in_flight_us, x.in_flight / n, 1e-9 * x.step);
      EXPECT_NEAR(r.f.exposed_us, x.exposed / n, 1e-9 * x.step);
      ASSERT_EQ(r.f.overlap.has_value(), x.in_flight > 0);
      if (r.f.overlap) {
        EXPECT_NEAR(*r.f.overlap, 1 - x.exposed / x.in_flight, 1e-9);
      }
      ASSERT_EQ(r.f.operations.size(), x.ops.size());
      for (const auto& o : r.f.operations) {
        ASSERT_TRUE(x.ops.count(o.name)) << o.name;
        const test::RefOp& y = x.ops.at(o.name);
        SCOPED_TRACE(o.name);
        EXPECT_EQ(o.events, y.n);
        EXPECT_NEAR(o.calls_per_step, y.n / n, 1e-12);
        EXPECT_NEAR(o.duration_us, y.dur / y.n, 1e-9 * y.dur);
        EXPECT_NEAR(o.per_step_us, y.dur / n, 1e-9 * y.dur);
        EXPECT_NEAR(*o.bytes, y.bytes / y.n, 1e-9 * y.bytes + 1e-9);
        ASSERT_EQ(o.wire_bytes.has_value(), y.wire_all);
        ASSERT_EQ(o.bandwidth_Bps.has_value(), y.wire_all);
        if (y.wire_all) {
          EXPECT_NEAR(*o.wire_bytes, y.wire / y.n, 1e-9 * y.wire + 1e-9);
          EXPECT_NEAR(*o.bandwidth_Bps, y.wire / (y.dur * 1e-6),
                      1e-9 * y.wire / (y.dur * 1e-6) + 1e-9);
        }
        ASSERT_EQ(o.delay_us.has_value(), o.bucket >= 0);
        if (o.bucket >= 0) {
          const test::RefBucket& b = x.buckets.at(o.bucket);
          EXPECT_EQ(o.name, fmt::format("allreduce bucket {}", o.bucket));
          EXPECT_NEAR(*o.delay_us, b.delay / b.n, 1e-9 * b.delay + 1e-9);
        }
      }
      ASSERT_EQ(r.f.outside.operations.size(), x.outside.size());
      for (const auto& o : r.f.outside.operations) {
        const test::RefOp& y = x.outside.at(o.name);
        EXPECT_EQ(o.events, y.n);
        EXPECT_NEAR(o.total_us, y.dur, 1e-9 * y.dur);
        EXPECT_NEAR(*o.wire_bytes, y.wire / y.n, 1e-9 * y.wire + 1e-9);
      }
      EXPECT_NEAR(r.f.outside.exposed_us, x.outside_exposed, 1e-9 * x.outside_exposed);
      const double step = x.step / n;
      mean_step += step / double(ref.size());
      fastest = std::min(fastest, step);
      if (step > slowest) slowest = step, slowest_rank = r.rank;
    }
    EXPECT_EQ(s.slowest_rank, slowest_rank);
    EXPECT_NEAR(s.skew, (slowest - fastest) / mean_step, 1e-9);
  }
}

TEST(TraceFile, MalformedJsonNamesTheByteOffset) {
  // The parser stops at the 18th byte of this text: the '}' where a value was expected.
  const std::string text = R"({"traceEvents": [})";
  EXPECT_NE(error_of(text).find("t.json: not valid JSON at byte 18 of 18"), std::string::npos)
      << error_of(text);
  // Cut off mid-file (a crashed writer): the offset is the end.
  const std::string cut = test::two_rank_trace().dump().substr(0, 300);
  EXPECT_NE(error_of(cut).find("not valid JSON at byte 301 of 300"), std::string::npos)
      << error_of(cut);
}

TEST(TraceFile, MissingFieldsNameTheEventAndTheField) {
  json doc = test::two_rank_trace();
  doc["traceEvents"][3].erase("dur");
  EXPECT_NE(error_of(doc.dump()).find("t.json: traceEvents[3]: missing field dur"),
            std::string::npos)
      << error_of(doc.dump());
  doc = test::two_rank_trace();
  doc["traceEvents"][4]["args"].erase("step");
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[4]: missing field args.step"),
            std::string::npos);
  doc = test::two_rank_trace();
  doc["traceEvents"][6]["args"].erase("ready_us");  // rank 0's "allreduce bucket 0"
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[6]: missing field args.ready_us"),
            std::string::npos)
      << error_of(doc.dump());
  doc = test::two_rank_trace();
  doc["traceEvents"][2]["ts"] = "soon";
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[2]: field ts is \"soon\", expected a number"),
            std::string::npos);
  doc = test::two_rank_trace();
  doc["traceEvents"][5].erase("ph");
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[5]: missing field ph"), std::string::npos);
  doc = test::two_rank_trace();
  doc["traceEvents"][9] = 42;
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[9] is number, expected an object"),
            std::string::npos)
      << error_of(doc.dump());
  doc["traceEvents"][9] = json::array({1});
  EXPECT_NE(error_of(doc.dump()).find("traceEvents[9] is array, expected an object"),
            std::string::npos)
      << error_of(doc.dump());
  EXPECT_NE(error_of("[1, 2]").find("expected a JSON object with traceEvents, found array"),
            std::string::npos);
  EXPECT_NE(error_of("{}").find("no traceEvents array"), std::string::npos);
}

TEST(TraceFile, AnEmptyWindowIsAnError) {
  const json doc =
      trace_doc(json::array({test::process_name(0, "rank 0 (node 0, h)")}), 1, "50:60");
  EXPECT_NE(error_of(doc.dump())
                .find("no step event in the trace (an empty window: "
                      "otherData.steps = '50:60'"),
            std::string::npos)
      << error_of(doc.dump());
}

TEST(TraceFile, StepRanges) {
  EXPECT_EQ(trace::parse_step_range("3:7", "--steps"), std::make_pair(3L, 7L));
  EXPECT_THROW(trace::parse_step_range("7:3", "--steps"), UsageError);
  EXPECT_THROW(trace::parse_step_range("3-7", "--steps"), UsageError);
  EXPECT_THROW(trace::parse_step_range("all", "--steps"), UsageError);
}

}  // namespace
}  // namespace dplab
