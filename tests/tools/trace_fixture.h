// Hand-built traces in the format of docs/trace_summary.md ("Trace format") for the tests of
// `dplab trace`, with the figures they must give worked out by hand in the comments.
#pragma once
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

namespace dplab::test {

inline nlohmann::json x_event(const std::string& name, const std::string& cat, int pid, int tid,
                              double ts, double dur, nlohmann::json args) {
  return {{"name", name}, {"cat", cat}, {"ph", "X"},  {"pid", pid},
          {"tid", tid},   {"ts", ts},   {"dur", dur}, {"args", std::move(args)}};
}

inline nlohmann::json process_name(int pid, const std::string& name) {
  return {
      {"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}};
}

inline nlohmann::json trace_doc(nlohmann::json events, int world_size, const std::string& steps) {
  return {{"displayTimeUnit", "ms"},
          {"otherData", {{"dplab_trace_version", 1}, {"world_size", world_size}, {"steps", steps}}},
          {"traceEvents", std::move(events)}};
}

inline nlohmann::json bucket_event(int pid, int k, long step, double ts, double dur, double ready,
                                   double bytes) {
  return x_event(fmt::format("allreduce bucket {}", k), "comm", pid, 2, ts, dur,
                 {{"step", step},
                  {"bucket", k},
                  {"bytes", bytes},
                  {"tensors", 2},
                  {"ready_us", ready},
                  {"launch_us", ts}});
}

// Two ranks, window 10:13, steps 10, 11, 12 (times in us).
// rank 0, step k at b = 10000 k: step [b, b+10000); data_wait 500; forward 3000; backward 5000;
//   bucket 0 [b+5000, b+7000) ready b+4800 4e6 bytes; bucket 1 [b+6500, b+9000) ready b+6000
//   1e6 bytes (overlaps bucket 0: union [5000, 9000) = 4000); wait 500; optimizer 1000.
//   Also an eval (no step) and a GPU-track comm event: the summary leaves both out.
//   -> step 10.0 ms, compute 9.0, data 0.5, in flight 4.0, exposed 0.5, overlap 0.875;
//      bucket 0: delay 0.2 ms, 2.0 ms, 4 MB, 2 GB/s; bucket 1: 0.5 ms, 2.5 ms, 1 MB, 0.4 GB/s.
// rank 1, steps at 0, 12000, 24000 lasting 12000, 12000, 15000: data_wait 1000; forward 4000;
//   backward 5000; bucket 0 [+6000, +9000) ready +5900; bucket 1 [+9300, +10300) ready +9000;
//   waits 200 + 100; optimizer 1000.
//   -> step 13.0 ms, compute 10.0, data 1.0, in flight 4.0, exposed 0.3, overlap 0.925;
//      bucket 0: 0.1 ms, 3.0 ms, 4 MB, 1.333 GB/s; bucket 1: 0.3 ms, 1.0 ms, 1 MB, 1 GB/s.
// mean over ranks: step 11.5, compute 9.5 (3.5 + 5 + 1), data 0.75, in flight 4.0, exposed 0.4,
//   overlap 1 - 0.4 / 4 = 0.9; bucket 0: 0.15 ms, 2.5 ms, 4 MB, 4e6 / 2.5e-3 = 1.6 GB/s;
//   bucket 1: 0.4 ms, 1.75 ms, 1 MB, 1e6 / 1.75e-3 = 0.5714 GB/s.
// slowest rank 1; skew (13 - 10) / 11.5 = 0.26087.
inline nlohmann::json two_rank_trace() {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(process_name(0, "rank 0 (node 0, hostA)"));
  ev.push_back(process_name(1, "rank 1 (node 0, hostA)"));
  const double base1[] = {0, 12000, 24000}, dur1[] = {12000, 12000, 15000};
  for (int k = 0; k < 3; ++k) {
    const long s = 10 + k;
    const nlohmann::json st = {{"step", s}};
    double b = 10000.0 * k;
    ev.push_back(
        x_event("step", "step", 0, 0, b, 10000, {{"step", s}, {"epoch", 1}, {"images", 32}}));
    ev.push_back(x_event("data_wait", "data", 0, 1, b, 500, st));
    ev.push_back(x_event("forward", "compute", 0, 1, b + 500, 3000, st));
    ev.push_back(x_event("backward", "compute", 0, 1, b + 3500, 5000, st));
    ev.push_back(bucket_event(0, 0, s, b + 5000, 2000, b + 4800, 4e6));
    ev.push_back(bucket_event(0, 1, s, b + 6500, 2500, b + 6000, 1e6));
    ev.push_back(x_event("gpu allreduce", "comm", 0, 5, b + 5000, 6000, st));
    ev.push_back(x_event("wait allreduce", "wait", 0, 1, b + 8500, 500, st));
    ev.push_back(x_event("optimizer", "compute", 0, 1, b + 9000, 1000, st));
    b = base1[k];
    ev.push_back(
        x_event("step", "step", 1, 0, b, dur1[k], {{"step", s}, {"epoch", 1}, {"images", 32}}));
    ev.push_back(x_event("data_wait", "data", 1, 1, b, 1000, st));
    ev.push_back(x_event("forward", "compute", 1, 1, b + 1000, 4000, st));
    ev.push_back(x_event("backward", "compute", 1, 1, b + 5000, 5000, st));
    ev.push_back(bucket_event(1, 0, s, b + 6000, 3000, b + 5900, 4e6));
    ev.push_back(bucket_event(1, 1, s, b + 9300, 1000, b + 9000, 1e6));
    ev.push_back(x_event("wait allreduce", "wait", 1, 1, b + 10000, 200, st));
    ev.push_back(x_event("wait allreduce", "wait", 1, 1, b + 10200, 100, st));
    ev.push_back(x_event("optimizer", "compute", 1, 1, b + 10300, 1000, st));
  }
  ev.push_back(x_event("eval", "compute", 0, 1, 30000, 5000, {{"epoch", 1}}));
  return trace_doc(std::move(ev), 2, "10:13");
}

}  // namespace dplab::test
