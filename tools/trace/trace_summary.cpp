// The summary's arithmetic. Per rank, each figure is a total over the rank's recorded steps
// divided by their number (a per-step mean); ratios (overlap, bandwidth) are formed from those
// means, never averaged themselves, so one short step cannot dominate them.
#include "dplab/tools/trace/trace_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dplab/core/error.h"

namespace dplab::trace {
namespace {

// Sums over one operation's events (over ranks: sums of the ranks' per-call means).
struct OpTotals {
  int bucket = -1;
  int events = 0;  // over ranks: ranks that have it
  double dur = 0, bytes = 0, wire = 0, delay = 0;
  double total = 0, per_step = 0, calls = 0, calls_per_step = 0;  // over ranks only
  bool all_bytes = true, all_wire = true;  // every event (rank) gave args.bytes / wire_bytes
};

// GradSync's buckets by index first, then the other operations by name.
struct OpOrder {
  bool operator()(const std::pair<int, std::string>& a,
                  const std::pair<int, std::string>& b) const {
    if ((a.first < 0) != (b.first < 0)) return a.first >= 0;
    return a < b;
  }
};
using OpMap = std::map<std::pair<int, std::string>, OpTotals, OpOrder>;

void add_event(OpMap& ops, const Event& e) {
  OpTotals& t = ops[{e.bucket, e.name}];
  t.bucket = e.bucket;
  ++t.events;
  t.dur += e.dur;
  t.bytes += e.bytes;
  t.wire += e.wire_bytes;
  t.all_bytes = t.all_bytes && e.has_bytes;
  t.all_wire = t.all_wire && e.has_wire_bytes;
  if (e.bucket >= 0) t.delay += e.ts - e.ready_us;
}

std::optional<double> bandwidth(const std::optional<double>& wire, double duration_us) {
  if (!wire || duration_us <= 0) return std::nullopt;
  return *wire / (duration_us * 1e-6);
}

// One rank's figures of an operation; `steps` 0 outside the steps.
OperationFigures op_figures(const std::string& name, const OpTotals& t, int steps) {
  OperationFigures o;
  o.name = name;
  o.bucket = t.bucket;
  o.events = t.events;
  o.calls = t.events;
  const double n = t.events;
  o.duration_us = t.dur / n;
  o.total_us = t.dur;
  if (steps > 0) {
    o.calls_per_step = n / steps;
    o.per_step_us = t.dur / steps;
  }
  if (t.all_bytes) o.bytes = t.bytes / n;
  if (t.all_wire) o.wire_bytes = t.wire / n;
  if (t.bucket >= 0) o.delay_us = t.delay / n;
  o.bandwidth_Bps = bandwidth(o.wire_bytes, o.duration_us);
  return o;
}

// Mean over the ranks that have each operation of their figures; events summed.
std::vector<OperationFigures> mean_ops(
    const std::vector<const std::vector<OperationFigures>*>& per_rank) {
  OpMap ops;
  std::map<std::pair<int, std::string>, int, OpOrder> events;
  for (const auto* rank_ops : per_rank)
    for (const OperationFigures& o : *rank_ops) {
      OpTotals& t = ops[{o.bucket, o.name}];
      t.bucket = o.bucket;
      ++t.events;
      t.dur += o.duration_us;
      t.total += o.total_us;
      t.per_step += o.per_step_us;
      t.calls += o.calls;
      t.calls_per_step += o.calls_per_step;
      t.bytes += o.bytes.value_or(0);
      t.wire += o.wire_bytes.value_or(0);
      t.all_bytes = t.all_bytes && o.bytes.has_value();
      t.all_wire = t.all_wire && o.wire_bytes.has_value();
      t.delay += o.delay_us.value_or(0);
      events[{o.bucket, o.name}] += o.events;
    }
  std::vector<OperationFigures> out;
  for (const auto& [key, t] : ops) {
    const double n = t.events;  // ranks that have it
    OperationFigures o;
    o.name = key.second;
    o.bucket = t.bucket;
    o.events = events[key];
    o.duration_us = t.dur / n;
    o.total_us = t.total / n;
    o.per_step_us = t.per_step / n;
    o.calls = t.calls / n;
    o.calls_per_step = t.calls_per_step / n;
    if (t.all_bytes) o.bytes = t.bytes / n;
    if (t.all_wire) o.wire_bytes = t.wire / n;
    if (t.bucket >= 0) o.delay_us = t.delay / n;
    o.bandwidth_Bps = bandwidth(o.wire_bytes, o.duration_us);
    out.push_back(std::move(o));
  }
  return out;
}

std::optional<double> overlap_of(double exposed, double in_flight) {
  if (in_flight <= 0) return std::nullopt;
  return 1.0 - exposed / in_flight;
}

// The GPU tracks (tids 4, 5) re-measure on the device what the host tracks already hold; adding
// them would count the same work twice.
bool host_side(const Event& e) {
  return e.tid != kTidGpuCompute && e.tid != kTidGpuComm;
}

// The events the figures add up. Loader workers' `load batch` events are left out: they prefetch
// (run before the step that consumes the batch, possibly outside the window), and the training
// thread's own `data_wait` is what the step waited for data.
bool summed(const Event& e) {
  if (!host_side(e) || on_loader_track(e)) return false;
  return e.name == "forward" || e.name == "backward" || e.name == "optimizer" ||
         e.name == "data_wait" || e.cat == "comm" || e.cat == "wait";
}

RankFigures rank_figures(int rank, const std::vector<const Event*>& evs) {
  RankFigures r;
  r.rank = rank;
  std::set<long> steps;
  double step_total = 0;
  int step_events = 0;
  for (const Event* e : evs)
    if (e->cat == "step" && e->name == "step") {
      steps.insert(e->step);
      step_total += e->dur;
      ++step_events;
    }
  if (steps.empty()) return r;
  r.first_step = *steps.begin();
  r.last_step = *steps.rbegin();

  double fwd = 0, bwd = 0, opt = 0, data = 0, exposed = 0, outside_exposed = 0;
  std::map<long, std::vector<std::pair<double, double>>> comm_by_step;
  OpMap ops, outside;
  for (const Event* e : evs) {
    if (e->cat == "step" || !summed(*e)) continue;
    if (e->step < 0) {  // communication outside the steps (the end of an epoch)
      if (e->cat == "comm") add_event(outside, *e);
      if (e->cat == "wait") outside_exposed += e->dur;
      continue;
    }
    if (!steps.count(e->step)) {
      ++r.incomplete_events;  // its step never finished (stopped run): not averaged
      continue;
    }
    if (e->cat == "compute" && e->name == "forward") fwd += e->dur;
    if (e->cat == "compute" && e->name == "backward") bwd += e->dur;
    if (e->cat == "compute" && e->name == "optimizer") opt += e->dur;
    if (e->name == "data_wait") data += e->dur;
    if (e->cat == "wait") exposed += e->dur;
    if (e->cat == "comm") comm_by_step[e->step].emplace_back(e->ts, e->end());
    if (e->cat == "comm") add_event(ops, *e);
  }
  double in_flight = 0;
  for (auto& [step, iv] : comm_by_step) in_flight += union_length_us(std::move(iv));

  const double n = step_events;
  StepFigures& f = r.f;
  f.steps = step_events;
  f.step_us = step_total / n;
  f.forward_us = fwd / n;
  f.backward_us = bwd / n;
  f.optimizer_us = opt / n;
  f.compute_us = (fwd + bwd + opt) / n;
  f.data_wait_us = data / n;
  f.in_flight_us = in_flight / n;
  f.exposed_us = exposed / n;
  f.overlap = overlap_of(exposed, in_flight);
  for (const auto& [key, t] : ops) f.operations.push_back(op_figures(key.second, t, step_events));
  for (const auto& [key, t] : outside) f.outside.operations.push_back(op_figures(key.second, t, 0));
  f.outside.exposed_us = outside_exposed;
  return r;
}

// Mean over ranks of each per-rank figure; an operation over the ranks that have it.
StepFigures mean_over(const std::vector<RankFigures>& ranks) {
  StepFigures m;
  const double n = double(ranks.size());
  double steps = 0;
  std::vector<const std::vector<OperationFigures>*> ops, outside;
  for (const auto& r : ranks) {
    steps += r.f.steps;
    m.step_us += r.f.step_us / n;
    m.forward_us += r.f.forward_us / n;
    m.backward_us += r.f.backward_us / n;
    m.optimizer_us += r.f.optimizer_us / n;
    m.compute_us += r.f.compute_us / n;
    m.data_wait_us += r.f.data_wait_us / n;
    m.in_flight_us += r.f.in_flight_us / n;
    m.exposed_us += r.f.exposed_us / n;
    m.outside.exposed_us += r.f.outside.exposed_us / n;
    ops.push_back(&r.f.operations);
    outside.push_back(&r.f.outside.operations);
  }
  m.steps = int(std::lround(steps / n));
  m.overlap = overlap_of(m.exposed_us, m.in_flight_us);
  m.operations = mean_ops(ops);
  m.outside.operations = mean_ops(outside);
  return m;
}

}  // namespace

double union_length_us(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (open && s <= cur_end) {
      cur_end = std::max(cur_end, e);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = s;
    cur_end = e;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

TraceSummary summarize(const TraceData& trace) {
  TraceSummary s;
  s.files = trace.files;
  s.from_rank_files = trace.from_rank_files;
  s.unfinished = trace.unfinished;
  s.window = trace.window;
  s.time_base = trace.time_base;
  s.world_size = trace.world_size;

  std::map<int, std::vector<const Event*>> by_rank;
  std::set<long> steps;
  for (const Event& e : trace.events) {
    by_rank[e.pid].push_back(&e);
    if (e.cat == "step" && e.name == "step") steps.insert(e.step);
  }
  DPLAB_CHECK(!steps.empty(),
              "{}: no step event in the trace (an empty window: otherData.steps = '{}'; the run "
              "stopped before the window's first step ended, or the window lies past its end)",
              trace.files.empty() ? "trace" : trace.files.front(), trace.window);
  s.steps_found = int(steps.size());
  s.first_step = *steps.begin();
  s.last_step = *steps.rbegin();

  for (const auto& [rank, evs] : by_rank) {
    RankFigures r = rank_figures(rank, evs);
    if (r.f.steps == 0) continue;  // e.g. a rank that only wrote metadata before it stopped
    auto name = trace.process_names.find(rank);
    r.name = name != trace.process_names.end() ? name->second : fmt::format("rank {}", rank);
    s.ranks.push_back(std::move(r));
  }
  s.mean = mean_over(s.ranks);
  const auto slow = std::max_element(s.ranks.begin(), s.ranks.end(),
                                     [](auto& a, auto& b) { return a.f.step_us < b.f.step_us; });
  const auto fast = std::min_element(s.ranks.begin(), s.ranks.end(),
                                     [](auto& a, auto& b) { return a.f.step_us < b.f.step_us; });
  s.slowest_rank = slow->rank;
  s.skew = s.mean.step_us > 0 ? (slow->f.step_us - fast->f.step_us) / s.mean.step_us : 0;
  return s;
}

}  // namespace dplab::trace
