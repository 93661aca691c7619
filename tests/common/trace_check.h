// Checks shared by the tracer's tests: a trace file parses as JSON (nlohmann) and has what
// Perfetto and chrome://tracing need (traceEvents; every event with ph, name, pid, tid and ts;
// complete events with a numeric ts and dur >= 0; metadata naming each process), and the events of
// a kind are counted from the parsed file, independently of the writer.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace dplab::test {

inline nlohmann::json read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  nlohmann::json j = nlohmann::json::parse(in);  // throws (fails the test) when invalid
  return j;
}

// Every structural requirement of the trace-event format; returns the number of X events.
inline size_t check_trace_structure(const nlohmann::json& j) {
  EXPECT_TRUE(j.is_object());
  EXPECT_EQ(j.value("displayTimeUnit", ""), "ms");
  EXPECT_TRUE(j.contains("otherData") && j["otherData"].is_object());
  EXPECT_EQ(j["otherData"].value("dplab_trace_version", 0), 1);
  EXPECT_TRUE(j.contains("traceEvents") && j["traceEvents"].is_array());
  size_t complete = 0;
  std::map<int, bool> named;  // pid -> has a process_name
  for (const auto& e : j["traceEvents"]) {
    EXPECT_TRUE(e.contains("ph") && e.contains("name") && e.contains("pid") && e.contains("tid") &&
                e.contains("ts"))
        << e.dump();
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "process_name") named[e["pid"].get<int>()] = true;
      EXPECT_TRUE(e.contains("args")) << e.dump();
    } else {
      EXPECT_EQ(ph, "X") << e.dump();
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
      EXPECT_TRUE(e.contains("cat")) << e.dump();
      if (!named.count(e["pid"].get<int>())) named[e["pid"].get<int>()] = false;
      ++complete;
    }
  }
  for (const auto& [pid, has] : named) EXPECT_TRUE(has) << "pid " << pid << " has no name";
  return complete;
}

inline size_t count_events(const nlohmann::json& j, const std::string& name, int tid = -1) {
  size_t n = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == name && (tid < 0 || e["tid"].get<int>() == tid)) ++n;
  return n;
}

}  // namespace dplab::test

#include "dplab/core/ops.h"
#include "dplab/core/trace/tracer.h"

namespace dplab::test {

// Records `steps` steps of spans measured on the device too (gpu = true) around real work on
// `device` (a matmul chain), closes, and checks the file. The host spans must be there on any
// device; on a CUDA device each also has a `gpu compute` (tid 4) twin of the same name and step
// that starts no earlier than the host began enqueuing it (the anchor's error aside) and ends
// before the tracer closed. Returns the parsed trace.
inline nlohmann::json run_gpu_span_case(Device device, const std::string& dir, int steps) {
  trace::TracerOptions o;
  o.dir = dir;
  o.steps = "all";
  o.device = device;
  trace::Tracer t(o);
  trace::RankPlace p;
  p.host = "h";
  t.start(p, trace::Clock::now(), steps);
  Tensor a = Tensor::full({256, 256}, 0.01, DType::f32, device);
  for (int s = 0; s < steps; ++s) {
    t.begin_step(s);
    trace::Span span(&t, "forward", "compute", trace::kCompute, true);
    Tensor x = a;
    for (int k = 0; k < 4; ++k) x = matmul(x, a);
  }
  t.begin_step(steps);  // outside the window: the GPU spans are read back here
  const double closed_us = t.us(trace::Clock::now());
  t.close();
  const nlohmann::json j = read_trace(t.file_path());
  EXPECT_EQ(check_trace_structure(j), size_t(device.is_cuda() ? 2 * steps : steps));
  EXPECT_EQ(count_events(j, "forward", trace::kCompute), size_t(steps));
  EXPECT_EQ(count_events(j, "forward", trace::kGpuCompute), size_t(device.is_cuda() ? steps : 0));
  std::map<int64_t, double> host_start;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == trace::kCompute)
      host_start[e["args"]["step"].get<int64_t>()] = e["ts"].get<double>();
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != trace::kGpuCompute) continue;
    const int64_t s = e["args"]["step"];
    EXPECT_TRUE(host_start.count(s)) << e.dump();
    if (!host_start.count(s)) continue;
    EXPECT_GE(e["ts"].get<double>(), host_start[s] - 200.0) << e.dump();
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), closed_us + 200.0) << e.dump();
  }
  return j;
}

}  // namespace dplab::test
