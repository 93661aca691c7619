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

struct BucketTotals {
  int events = 0;
  double delay = 0, dur = 0, bytes = 0;
};

BucketFigures bucket_figures(int k, const BucketTotals& t) {
  BucketFigures b;
  b.bucket = k;
  b.events = t.events;
  b.delay_us = t.delay / t.events;
  b.duration_us = t.dur / t.events;
  b.bytes = t.bytes / t.events;
  b.bandwidth_Bps = b.duration_us > 0 ? b.bytes / (b.duration_us * 1e-6) : NAN;
  return b;
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

  double fwd = 0, bwd = 0, opt = 0, data = 0, exposed = 0;
  std::map<long, std::vector<std::pair<double, double>>> comm_by_step;
  std::map<int, BucketTotals> buckets;
  for (const Event* e : evs) {
    if (e->cat == "step" || !summed(*e) || e->step < 0) continue;
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
    if (e->cat == "comm" && e->bucket >= 0) {
      BucketTotals& b = buckets[e->bucket];
      ++b.events;
      b.delay += e->ts - e->ready_us;
      b.dur += e->dur;
      b.bytes += e->bytes;
    }
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
  for (const auto& [k, t] : buckets) f.buckets.push_back(bucket_figures(k, t));
  return r;
}

// Mean over ranks of each per-rank figure; bucket K over the ranks that have it.
StepFigures mean_over(const std::vector<RankFigures>& ranks) {
  StepFigures m;
  const double n = double(ranks.size());
  double steps = 0;
  std::map<int, BucketTotals> buckets;  // sums of the ranks' means
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
    for (const auto& b : r.f.buckets) {
      BucketTotals& t = buckets[b.bucket];
      ++t.events;  // here: ranks that have bucket K
      t.delay += b.delay_us;
      t.dur += b.duration_us;
      t.bytes += b.bytes;
    }
  }
  m.steps = int(std::lround(steps / n));
  m.overlap = overlap_of(m.exposed_us, m.in_flight_us);
  for (const auto& [k, t] : buckets) {
    m.buckets.push_back(bucket_figures(k, t));
    m.buckets.back().events = 0;
    for (const auto& r : ranks)
      for (const auto& b : r.f.buckets)
        if (b.bucket == k) m.buckets.back().events += b.events;
  }
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
