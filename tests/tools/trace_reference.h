// The summary's figures computed straight from a trace's JSON, independently of
// tools/trace (no shared code, a different union algorithm: a sweep over start/end points
// counting how many communication events are open), so that tests can compare `dplab trace`
// against it on hand-built and on recorded traces (docs/trace_summary.md has the formulas).
#pragma once
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dplab::test {

struct RefBucket {
  int n = 0;
  double delay = 0, dur = 0, bytes = 0;  // sums over the bucket's events
};

// One operation (events of one name): sums over its events; `wire_all`: every event had
// args.wire_bytes.
struct RefOp {
  int n = 0;
  double dur = 0, bytes = 0, wire = 0;
  bool wire_all = true;
};

// Per-rank sums over the rank's recorded steps (divide by `steps` for per-step means).
struct RefRank {
  int steps = 0;
  double step = 0, compute = 0, data_wait = 0, in_flight = 0, exposed = 0;
  std::map<int, RefBucket> buckets;
  std::map<std::string, RefOp> ops;      // comm events of the recorded steps, by name
  std::map<std::string, RefOp> outside;  // comm events without args.step
  double outside_exposed = 0;            // wait events without args.step
};

inline void ref_add(RefOp& o, const nlohmann::json& e) {
  ++o.n;
  o.dur += e["dur"].get<double>();
  o.bytes += e["args"]["bytes"].get<double>();
  if (e["args"].contains("wire_bytes"))
    o.wire += e["args"]["wire_bytes"].get<double>();
  else
    o.wire_all = false;
}

// Length of the union of [start, end) intervals by sweeping their end points.
inline double ref_union(const std::vector<std::pair<double, double>>& iv) {
  std::vector<std::pair<double, int>> points;  // (time, +1 start / -1 end); ends sort first
  for (const auto& [s, e] : iv) {
    points.push_back({s, +1});
    points.push_back({e, -1});
  }
  std::sort(points.begin(), points.end());
  double total = 0, last = 0;
  int open = 0;
  for (const auto& [t, d] : points) {
    if (open > 0) total += t - last;
    open += d;
    last = t;
  }
  return total;
}

// rank -> sums, from the events of `doc` (host-side tracks only: tids 0 to 3).
inline std::map<int, RefRank> reference_sums(const nlohmann::json& doc) {
  std::map<int, std::set<long>> steps;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "step")
      steps[e["pid"].get<int>()].insert(e["args"]["step"].get<long>());
  std::map<int, RefRank> out;
  std::map<int, std::map<long, std::vector<std::pair<double, double>>>> comm;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"].get<int>() > 3) continue;
    if (!e.contains("args") || !e["args"].contains("step")) {
      if (e["cat"] == "comm") ref_add(out[e["pid"].get<int>()].outside[e["name"]], e);
      if (e["cat"] == "wait") out[e["pid"].get<int>()].outside_exposed += e["dur"].get<double>();
      continue;
    }
    const int pid = e["pid"];
    const long step = e["args"]["step"];
    if (!steps[pid].count(step)) continue;
    const std::string name = e["name"], cat = e["cat"];
    const double ts = e["ts"], dur = e["dur"];
    RefRank& r = out[pid];
    if (name == "step") {
      ++r.steps;
      r.step += dur;
    }
    if (name == "forward" || name == "backward" || name == "optimizer") r.compute += dur;
    if (name == "data_wait") r.data_wait += dur;
    if (cat == "wait") r.exposed += dur;
    if (cat == "comm") comm[pid][step].push_back({ts, ts + dur});
    if (cat == "comm") ref_add(r.ops[name], e);
    if (cat == "comm" && e["args"].contains("bucket")) {
      RefBucket& b = r.buckets[e["args"]["bucket"].get<int>()];
      ++b.n;
      b.delay += ts - e["args"]["ready_us"].get<double>();
      b.dur += dur;
      b.bytes += e["args"]["bytes"].get<double>();
    }
  }
  for (auto& [pid, by_step] : comm)
    for (auto& [step, iv] : by_step) out[pid].in_flight += ref_union(iv);
  return out;
}

}  // namespace dplab::test
