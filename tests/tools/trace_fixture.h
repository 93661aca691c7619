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

// A GradSync bucket's allreduce. args.wire_bytes defaults to the payload: what a ring allreduce
// puts on a rank's links at P = 2 (2(P-1)/P n = n), the world size of the traces below.
inline nlohmann::json bucket_event(int pid, int k, long step, double ts, double dur, double ready,
                                   double bytes, double wire_bytes = -1) {
  return x_event(fmt::format("allreduce bucket {}", k), "comm", pid, 2, ts, dur,
                 {{"step", step},
                  {"bucket", k},
                  {"bytes", bytes},
                  {"wire_bytes", wire_bytes < 0 ? bytes : wire_bytes},
                  {"tensors", 2},
                  {"ready_us", ready},
                  {"launch_us", ts}});
}

// A communication event as CommMeter records it (comm/meter.h): named after the operation, on
// tid 2, args.bytes (payload) and args.wire_bytes (this rank's link traffic); step < 0: outside
// the steps (no args.step); wire_bytes < 0: none (a trace written before wire bytes were).
inline nlohmann::json comm_event(const std::string& name, int pid, long step, double ts, double dur,
                                 double bytes, double wire_bytes) {
  nlohmann::json args = {{"bytes", bytes}};
  if (wire_bytes >= 0) args["wire_bytes"] = wire_bytes;
  if (step >= 0) args["step"] = step;
  return x_event(name, "comm", pid, 2, ts, dur, std::move(args));
}

// Its wait (tid 1, category wait), as the meter records it beside the comm event.
inline nlohmann::json wait_event(const std::string& name, int pid, long step, double ts,
                                 double dur) {
  nlohmann::json args = nlohmann::json::object();
  if (step >= 0) args["step"] = step;
  return x_event("wait " + name, "wait", pid, 1, ts, dur, std::move(args));
}

// Four ranks of a world of 4, window 0:2, steps 0 and 1 of 10000 us (base b = 10000 s), every
// communication event named after its operation (no GradSync bucket). Per rank r and step s:
//   forward [b, b+3000), backward [b+3000, b+7000), optimizer [b+9000, b+10000);
//   "gossip exchange" [b+3000, b+5000): 1e6 bytes, wire 1e6 (point to point: n), both steps;
//   step 0: "outer gradient" [b+7000, b+7000+D) with D = 500 (r+1) us, 4e6 bytes, wire
//     2(P-1)/P n = 1.5 x 4e6 = 6e6 (ring allreduce at P = 4), and its wait over the same time;
//   step 1: "broadcast" [b+7000, b+7400): 8e5 bytes, wire (P-1)/P n = 6e5; "daso global sync"
//     [b+7500, b+8500): 2e6 bytes and no args.wire_bytes (an older writer: wire n/a);
//   after step 1 (no args.step: the end of the epoch): "final average" [20500, 21500), 4e6
//     bytes, wire 6e6, with its wait; an eval [21500, 25000).
// Per rank, per step (2 steps): in flight (2000 + D + 3400) / 2 = 2700 + D/2; exposed D/2.
//   broadcast: 1 call, 0.5 per step, 0.4 ms per call, 0.2 ms per step, 0.8 MB, wire 0.6 MB,
//     6e5 / 400e-6 = 1.5 GB/s;
//   daso global sync: 1 call, 0.5 per step, 1.0 ms, 0.5 ms per step, 2 MB, wire n/a, n/a;
//   gossip exchange: 2 calls, 1 per step, 2.0 ms, 2.0 ms per step, 1 MB, wire 1 MB, 0.5 GB/s;
//   outer gradient: 1 call, 0.5 per step, D, D/2 per step, 4 MB, wire 6 MB, 6e6 / D: rank 0
//     12 GB/s, rank 1 6, rank 2 4, rank 3 3.
//   Outside the steps: final average 1 call, 1.0 ms, total 1.0 ms, 4 MB, wire 6 MB, 6 GB/s;
//     exposed wait 1.0 ms.
// Mean over ranks: outer gradient D = 1.25 ms, 0.625 ms per step, 6e6 / 1.25e-3 = 4.8 GB/s,
//   4 calls; in flight 2700 + 625 = 3325 us per step, exposed 625, overlap 1 - 625 / 3325.
inline nlohmann::json operations_trace(const std::string& time_base = "") {
  nlohmann::json ev = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) {
    ev.push_back(process_name(r, fmt::format("rank {} (node 0, hostA)", r)));
    const double D = 500.0 * (r + 1);
    for (long s = 0; s < 2; ++s) {
      const double b = 10000.0 * s;
      const nlohmann::json st = {{"step", s}};
      ev.push_back(x_event("step", "step", r, 0, b, 10000, {{"step", s}, {"epoch", 1}}));
      ev.push_back(x_event("forward", "compute", r, 1, b, 3000, st));
      ev.push_back(x_event("backward", "compute", r, 1, b + 3000, 4000, st));
      ev.push_back(comm_event("gossip exchange", r, s, b + 3000, 2000, 1e6, 1e6));
      if (s == 0) {
        ev.push_back(comm_event("outer gradient", r, s, b + 7000, D, 4e6, 6e6));
        ev.push_back(wait_event("outer gradient", r, s, b + 7000, D));
      } else {
        ev.push_back(comm_event("broadcast", r, s, b + 7000, 400, 8e5, 6e5));
        ev.push_back(comm_event("daso global sync", r, s, b + 7500, 1000, 2e6, -1));
      }
      ev.push_back(x_event("optimizer", "compute", r, 1, b + 9000, 1000, st));
    }
    ev.push_back(comm_event("final average", r, -1, 20500, 1000, 4e6, 6e6));
    ev.push_back(wait_event("final average", r, -1, 20500, 1000));
    ev.push_back(x_event("eval", "compute", r, 1, 21500, 3500, {{"epoch", 1}}));
  }
  nlohmann::json doc = trace_doc(std::move(ev), 4, "0:2");
  if (!time_base.empty()) doc["otherData"]["time_base"] = time_base;
  return doc;
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
