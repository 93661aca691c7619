// The timeline writer (core/trace): step windows, the streamed JSON file (valid, complete,
// bounded memory however many events), concurrent recording, the window, the merge of ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "../data/temp_dir.h"
#include "common/trace_check.h"
#include "dplab/core/error.h"
#include "dplab/core/trace/merge.h"
#include "dplab/core/trace/step_window.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {
namespace {

using trace::StepWindow;

TEST(TraceStepWindow, ParsesRangesAllAndAuto) {
  const StepWindow w = trace::parse_step_window("3:7", 100);
  EXPECT_FALSE(w.contains(2));
  EXPECT_TRUE(w.contains(3));
  EXPECT_TRUE(w.contains(6));
  EXPECT_FALSE(w.contains(7));
  EXPECT_EQ(w.str(), "3:7");
  const StepWindow all = trace::parse_step_window("all", 5);
  EXPECT_TRUE(all.contains(0) && all.contains(1000000000));
  EXPECT_EQ(all.str(), "all");
  // auto: 10:20 after warm-up; a shorter run: its last 10 steps; a very short one: all of it.
  EXPECT_EQ(trace::parse_step_window("auto", 1000).str(), "10:20");
  EXPECT_EQ(trace::parse_step_window("auto", 20).str(), "10:20");
  EXPECT_EQ(trace::parse_step_window("auto", 14).str(), "4:14");
  EXPECT_EQ(trace::parse_step_window("auto", 6).str(), "0:6");
  for (const char* bad : {"7:3", "3:3", "x", "3:", ":4", "-1:4", "1:2:3", ""})
    EXPECT_THROW(trace::parse_step_window(bad, 100), Error) << bad;
}

trace::TracerOptions options(const std::string& dir, const std::string& steps,
                             size_t chunk = size_t(1) << 20) {
  trace::TracerOptions o;
  o.dir = dir;
  o.steps = steps;
  o.chunk_bytes = chunk;
  return o;
}

trace::RankPlace place(int rank, int world, const std::string& host) {
  trace::RankPlace p;
  p.rank = rank;
  p.world_size = world;
  p.node = 0;
  p.host = host;
  return p;
}

TEST(TraceWriter, FileIsValidJsonWithMetadataAndEvents) {
  test::ScopedTempDir dir("trace-valid");
  trace::Tracer t(options(dir.file("trace"), "all"));
  t.start(place(1, 2, "host \"q\"\\x"), trace::Clock::now(), 10);
  t.begin_step(0);
  { trace::Span s(&t, "forward", "compute"); }
  {
    trace::Span s(&t, "eval", "compute");
    s.without_step();
    s.arg("epoch", 1);
  }
  t.complete_us("allreduce bucket 0", "comm", trace::kComm, 5.5, 2.25, 0,
                {{"bucket", 0}, {"bytes", 4096}, {"tensors", 2}, {"ready_us", 1.5}});
  t.close();
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_1.json"));
  EXPECT_EQ(test::check_trace_structure(j), 3u);
  EXPECT_EQ(j["otherData"]["rank"], 1);
  EXPECT_EQ(j["otherData"]["world_size"], 2);
  EXPECT_EQ(j["otherData"]["host"], "host \"q\"\\x");
  bool named = false, sorted = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "rank 1 (node 0, host \"q\"\\x)");
      named = true;
    }
    if (e["name"] == "process_sort_index") sorted = e["args"]["sort_index"] == 1;
    if (e["name"] == "allreduce bucket 0") {
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["tid"], 2);
      EXPECT_EQ(e["cat"], "comm");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 5.5);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.25);
      EXPECT_EQ(e["args"]["step"], 0);
      EXPECT_EQ(e["args"]["bytes"], 4096);
      EXPECT_DOUBLE_EQ(e["args"]["ready_us"].get<double>(), 1.5);
    }
    if (e["name"] == "forward") {
      EXPECT_EQ(e["args"]["step"], 0);
    }
    if (e["name"] == "eval") {
      EXPECT_FALSE(e["args"].contains("step"));
      EXPECT_EQ(e["args"]["epoch"], 1);
    }
  }
  EXPECT_TRUE(named && sorted);
}

TEST(TraceWriter, RecordsOnlyInsideTheWindow) {
  test::ScopedTempDir dir("trace-window");
  trace::Tracer t(options(dir.file("trace"), "2:4"));
  EXPECT_EQ(trace::active(&t), nullptr);  // not started
  t.start(place(0, 1, "h"), trace::Clock::now(), 10);
  for (int64_t step = 0; step < 6; ++step) {
    t.begin_step(step);
    EXPECT_EQ(trace::active(&t) != nullptr, step == 2 || step == 3) << step;
    trace::Span s(&t, "forward", "compute");
    trace::BlockingComm c(&t, "parameter average", "wait parameter average", 8);
  }
  EXPECT_EQ(trace::active(nullptr), nullptr);
  t.close();
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_0.json"));
  EXPECT_EQ(test::check_trace_structure(j), 6u);
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      const int64_t s = e["args"]["step"];
      EXPECT_TRUE(s == 2 || s == 3) << e.dump();
    }
  EXPECT_EQ(test::count_events(j, "parameter average", trace::kComm), 2u);
  EXPECT_EQ(test::count_events(j, "wait parameter average", trace::kCompute), 2u);
}

// After the epoch's last step (between_steps) events are still recorded, without args.step, until
// the next step begins; the file says which clock it is on (otherData.time_base and clock).
TEST(TraceWriter, BetweenStepsEventsHaveNoStep) {
  test::ScopedTempDir dir("trace-between");
  trace::Tracer t(options(dir.file("trace"), "all"));
  t.start(place(0, 1, "h"), trace::Clock::now(), 10);
  t.begin_step(3);
  { trace::BlockingComm c(&t, "parameter average", "wait parameter average", 8); }
  t.between_steps();
  EXPECT_TRUE(t.outside_steps());
  EXPECT_NE(trace::active(&t), nullptr);  // the last step was in the window: still recording
  { trace::BlockingComm c(&t, "final average", "wait final average", 8); }
  t.begin_step(4);
  EXPECT_FALSE(t.outside_steps());
  { trace::Span s(&t, "forward", "compute"); }
  t.close();
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_0.json"));
  EXPECT_EQ(j["otherData"]["time_base"], "wall");
  EXPECT_EQ(j["otherData"]["clock"].get<std::string>().find("virtual"), std::string::npos);
  std::map<std::string, int64_t> step_of;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      const auto args = e.value("args", nlohmann::json::object());
      step_of[e["name"]] = args.contains("step") ? args["step"].get<int64_t>() : -1;
    }
  EXPECT_EQ(step_of, (std::map<std::string, int64_t>{{"parameter average", 3},
                                                     {"wait parameter average", 3},
                                                     {"final average", -1},
                                                     {"wait final average", -1},
                                                     {"forward", 4}}));
}

// A virtual clock: otherData says so (time_base, as the metrics records' "virtual:<platform>").
TEST(TraceWriter, AVirtualClockIsNamedInTheFile) {
  struct Fixed final : TimeSource {
    double now() override { return 0.5; }
    bool is_virtual() const override { return true; }
  };
  test::ScopedTempDir dir("trace-virtual-base");
  trace::Tracer t(options(dir.file("trace"), "all"));
  t.set_time(std::make_shared<Fixed>(), "virtual:testlab");
  EXPECT_EQ(t.time_base(), "virtual:testlab");
  t.start(place(0, 1, "h"), trace::Clock::now(), 10);
  t.close();
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_0.json"));
  EXPECT_EQ(j["otherData"]["time_base"], "virtual:testlab");
  EXPECT_NE(j["otherData"]["clock"].get<std::string>().find("virtual time"), std::string::npos);
  trace::Tracer unnamed(options(dir.file("trace2"), "all"));
  unnamed.set_time(std::make_shared<Fixed>());
  EXPECT_EQ(unnamed.time_base(), "virtual");
  trace::Tracer wall(options(dir.file("trace3"), "all"));
  wall.set_time(std::make_shared<WallTime>(), "wall");
  EXPECT_EQ(wall.time_base(), "wall");
}

// Many events through a small chunk: memory stays under the hard limit, the file holds all.
TEST(TraceWriter, StreamsInChunksWithBoundedMemory) {
  test::ScopedTempDir dir("trace-chunks");
  const size_t chunk = 4096;
  trace::Tracer t(options(dir.file("trace"), "all", chunk));
  t.start(place(0, 1, "h"), trace::Clock::now(), 0);
  const int steps = 400, per_step = 50;
  for (int s = 0; s < steps; ++s) {
    t.begin_step(s);
    for (int k = 0; k < per_step; ++k) trace::Span span(&t, "forward", "compute");
  }
  const auto written_before_close = std::filesystem::file_size(dir.file("trace/rank_0.json"));
  t.close();
  // One event is about 120 bytes: the hard limit plus one event bounds the buffer.
  EXPECT_LE(t.max_buffered_bytes(), t.hard_limit_bytes() + 512);
  const auto size = std::filesystem::file_size(dir.file("trace/rank_0.json"));
  EXPECT_GT(size, 100 * chunk);                                      // far more than was ever held
  EXPECT_GT(written_before_close, size - 2 * t.hard_limit_bytes());  // streamed, not at close
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_0.json"));
  EXPECT_EQ(test::check_trace_structure(j), size_t(steps * per_step));
}

// The compute thread and a communication thread record at once: no event lost or torn.
TEST(TraceWriter, ConcurrentThreadsKeepEveryEvent) {
  test::ScopedTempDir dir("trace-threads");
  trace::Tracer t(options(dir.file("trace"), "all", 2048));
  t.start(place(0, 1, "h"), trace::Clock::now(), 0);
  t.begin_step(0);
  const int n = 5000;
  std::thread comm([&] {
    for (int i = 0; i < n; ++i) {
      const auto t0 = trace::Clock::now();
      t.complete("allreduce bucket 1", "comm", trace::kComm, t0, trace::Clock::now(), 0,
                 {{"bytes", 64}});
    }
  });
  for (int i = 0; i < n; ++i) trace::Span s(&t, "backward", "compute");
  comm.join();
  t.close();
  const nlohmann::json j = test::read_trace(dir.file("trace/rank_0.json"));
  EXPECT_EQ(test::check_trace_structure(j), size_t(2 * n));
  EXPECT_EQ(test::count_events(j, "allreduce bucket 1", trace::kComm), size_t(n));
  EXPECT_EQ(test::count_events(j, "backward", trace::kCompute), size_t(n));
}

TEST(TraceMerge, OneProcessPerRankAndRefusesAnUnclosedFile) {
  test::ScopedTempDir dir("trace-merge");
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    trace::Tracer t(options(dir.file("trace"), "all"));
    t.start(place(r, 3, "h"), trace::Clock::now(), 0);
    t.begin_step(0);
    for (int k = 0; k <= r; ++k) trace::Span s(&t, "forward", "compute");
    t.close();
    files.push_back(t.file_path());
  }
  trace::merge_traces(files, dir.file("trace.json"),
                      "{\"dplab_trace_version\":1,\"world_size\":3}");
  const nlohmann::json j = test::read_trace(dir.file("trace.json"));
  EXPECT_EQ(test::check_trace_structure(j), 6u);  // 1 + 2 + 3
  std::map<int, int> per_pid;
  std::map<int, std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") ++per_pid[e["pid"].get<int>()];
    if (e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
  }
  EXPECT_EQ(per_pid, (std::map<int, int>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(names[2], "rank 2 (node 0, h)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("trace.json.tmp")));

  // A rank that never closed its file (the last line is an event): named in the error.
  {
    std::ifstream in(files[1]);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.resize(text.rfind("\n]}"));
    std::ofstream(files[1], std::ios::trunc) << text;
  }
  try {
    trace::merge_traces(files, dir.file("trace2.json"), "{}");
    FAIL() << "merged an unclosed file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank_1.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did not close"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("trace2.json")));
}

// The CPU twin of tests/cuda/test_cuda_trace.cpp: spans marked for the GPU tracks on a CPU
// device are host events only.
TEST(TraceGpuTracks, CpuDeviceHasHostSpansOnly) {
  test::ScopedTempDir dir("trace-gpu-cpu");
  test::run_gpu_span_case(Device::cpu(), dir.file("trace"), 5);
}

}  // namespace
}  // namespace dplab
