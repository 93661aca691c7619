// dplab trace's reading and arithmetic (tools/trace): hand-built traces whose figures are
// worked out by hand (trace_fixture.h), random traces against an independent computation
// (trace_reference.h), and the errors a broken trace gives.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "dplab/core/error.h"
#include "dplab/tools/trace/trace_file.h"
#include "dplab/tools/trace/trace_summary.h"
#include "dplab/tools/train/config.h"  // UsageError
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
  ASSERT_EQ(r0.buckets.size(), 2u);
  EXPECT_EQ(r0.buckets[0].events, 3);
  EXPECT_DOUBLE_EQ(r0.buckets[0].delay_us, 200);
  EXPECT_DOUBLE_EQ(r0.buckets[0].duration_us, 2000);
  EXPECT_DOUBLE_EQ(r0.buckets[0].bytes, 4e6);
  EXPECT_DOUBLE_EQ(r0.buckets[0].bandwidth_Bps, 2e9);
  EXPECT_DOUBLE_EQ(r0.buckets[1].delay_us, 500);
  EXPECT_DOUBLE_EQ(r0.buckets[1].duration_us, 2500);
  EXPECT_DOUBLE_EQ(r0.buckets[1].bandwidth_Bps, 4e8);

  EXPECT_DOUBLE_EQ(r1.step_us, 13000);
  EXPECT_DOUBLE_EQ(r1.compute_us, 10000);
  EXPECT_DOUBLE_EQ(r1.data_wait_us, 1000);
  EXPECT_DOUBLE_EQ(r1.in_flight_us, 4000);
  EXPECT_DOUBLE_EQ(r1.exposed_us, 300);
  EXPECT_DOUBLE_EQ(*r1.overlap, 0.925);
  EXPECT_DOUBLE_EQ(r1.buckets[0].delay_us, 100);
  EXPECT_NEAR(r1.buckets[0].bandwidth_Bps, 4e6 / 3e-3, 1);
  EXPECT_DOUBLE_EQ(r1.buckets[1].delay_us, 300);
  EXPECT_DOUBLE_EQ(r1.buckets[1].bandwidth_Bps, 1e9);

  EXPECT_DOUBLE_EQ(s.mean.step_us, 11500);
  EXPECT_DOUBLE_EQ(s.mean.compute_us, 9500);
  EXPECT_DOUBLE_EQ(s.mean.forward_us, 3500);
  EXPECT_DOUBLE_EQ(s.mean.data_wait_us, 750);
  EXPECT_DOUBLE_EQ(s.mean.in_flight_us, 4000);
  EXPECT_DOUBLE_EQ(s.mean.exposed_us, 400);
  EXPECT_DOUBLE_EQ(*s.mean.overlap, 0.9);
  ASSERT_EQ(s.mean.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(s.mean.buckets[0].delay_us, 150);
  EXPECT_DOUBLE_EQ(s.mean.buckets[0].duration_us, 2500);
  EXPECT_DOUBLE_EQ(s.mean.buckets[0].bandwidth_Bps, 1.6e9);
  EXPECT_DOUBLE_EQ(s.mean.buckets[1].delay_us, 400);
  EXPECT_DOUBLE_EQ(s.mean.buckets[1].duration_us, 1750);
  EXPECT_NEAR(s.mean.buckets[1].bandwidth_Bps, 1e6 / 1.75e-3, 1e-3);
  EXPECT_EQ(s.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(s.skew, 3000.0 / 11500.0);
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
  EXPECT_TRUE(s.ranks[0].f.buckets.empty());
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
  EXPECT_DOUBLE_EQ(s.ranks[0].f.buckets[0].duration_us, 2000);
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
          ev.push_back(bucket_event(r, k, s, ts, uni(1, 400), ts - uni(0, 100), uni(1, 1e6)));
          ev.push_back(x_event("wait allreduce", "wait", r, 1, ts, uni(0, 20), {{"step", s}}));
        }
        t += len;
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
      ASSERT_EQ(r.f.buckets.size(), x.buckets.size());
      for (const auto& b : r.f.buckets) {
        const test::RefBucket& y = x.buckets.at(b.bucket);
        EXPECT_EQ(b.events, y.n);
        EXPECT_NEAR(b.delay_us, y.delay / y.n, 1e-9 * y.delay + 1e-9);
        EXPECT_NEAR(b.duration_us, y.dur / y.n, 1e-9 * y.dur);
        EXPECT_NEAR(b.bandwidth_Bps, y.bytes / (y.dur * 1e-6), 1e-9 * y.bytes / (y.dur * 1e-6));
      }
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
