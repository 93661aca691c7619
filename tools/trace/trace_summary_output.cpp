// The summary printed for people (ms, MB, GB/s in labelled columns) and as JSON for tools
// (seconds, bytes, bytes per second; keys documented in docs/trace_summary.md). Both print the
// same numbers; only the units differ.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "dplab/tools/trace/trace_summary.h"

namespace dplab::trace {
namespace {

std::string ms(double us) {
  return fmt::format("{:.3f}", us / 1000.0);
}

std::string percent(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f} %", *v * 100.0) : "n/a";
}

std::string time_row(const std::string& label, const StepFigures& f) {
  return fmt::format("{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>13}{:>13}{:>10}\n", label,
                     ms(f.step_us), ms(f.compute_us), ms(f.forward_us), ms(f.backward_us),
                     ms(f.optimizer_us), ms(f.data_wait_us), ms(f.in_flight_us), ms(f.exposed_us),
                     percent(f.overlap));
}

std::string mb(const std::optional<double>& bytes) {
  return bytes ? fmt::format("{:.3f}", *bytes / 1e6) : "n/a";
}

std::string opt_ms(const std::optional<double>& us) {
  return us ? ms(*us) : "-";
}

std::string gbps(const std::optional<double>& Bps) {
  return Bps ? fmt::format("{:.3f}", *Bps / 1e9) : "n/a";
}

// The operation column is as wide as its longest name.
size_t name_width(const TraceSummary& s, bool outside) {
  size_t w = 9;  // "operation"
  const auto widen = [&](const StepFigures& f) {
    for (const auto& o : outside ? f.outside.operations : f.operations)
      w = std::max(w, o.name.size());
  };
  for (const auto& r : s.ranks) widen(r.f);
  widen(s.mean);
  return w + 2;
}

std::string op_row(const std::string& label, size_t w, const OperationFigures& o) {
  return fmt::format("{:<16}{:<{}}{:>10.2f}{:>14}{:>14}{:>14}{:>14}{:>16}{:>16}\n", label, o.name,
                     w, o.calls_per_step, ms(o.duration_us), ms(o.per_step_us), mb(o.bytes),
                     mb(o.wire_bytes), gbps(o.bandwidth_Bps), opt_ms(o.delay_us));
}

std::string outside_row(const std::string& label, size_t w, const OperationFigures& o) {
  return fmt::format("{:<16}{:<{}}{:>10.2f}{:>14}{:>14}{:>14}{:>14}{:>16}\n", label, o.name, w,
                     o.calls, ms(o.duration_us), ms(o.total_us), mb(o.bytes), mb(o.wire_bytes),
                     gbps(o.bandwidth_Bps));
}

nlohmann::json maybe(const std::optional<double>& v, double scale = 1) {
  return v ? nlohmann::json(*v * scale) : nlohmann::json(nullptr);
}

nlohmann::json op_json(const OperationFigures& o, bool in_steps) {
  nlohmann::json j = {
      {"name", o.name},
      {"bucket", o.bucket >= 0 ? nlohmann::json(o.bucket) : nlohmann::json(nullptr)},
      {"events", o.events},
      {"calls", o.calls},
      {"duration_s", o.duration_us * 1e-6},
      {"in_flight_total_s", o.total_us * 1e-6},
      {"bytes", maybe(o.bytes)},
      {"wire_bytes", maybe(o.wire_bytes)},
      {"wire_bandwidth_bytes_per_s", maybe(o.bandwidth_Bps)}};
  if (in_steps) {
    j["calls_per_step"] = o.calls_per_step;
    j["in_flight_per_step_s"] = o.per_step_us * 1e-6;
    j["ready_to_launch_s"] = maybe(o.delay_us, 1e-6);
  }
  return j;
}

nlohmann::json step_json(const StepFigures& f) {
  nlohmann::json j;
  j["steps"] = f.steps;
  j["step_time_s"] = f.step_us * 1e-6;
  j["compute_s"] = f.compute_us * 1e-6;
  j["forward_s"] = f.forward_us * 1e-6;
  j["backward_s"] = f.backward_us * 1e-6;
  j["optimizer_s"] = f.optimizer_us * 1e-6;
  j["data_wait_s"] = f.data_wait_us * 1e-6;
  j["comm_in_flight_s"] = f.in_flight_us * 1e-6;
  j["exposed_wait_s"] = f.exposed_us * 1e-6;
  j["overlap"] = f.overlap ? nlohmann::json(*f.overlap) : nlohmann::json(nullptr);
  j["operations"] = nlohmann::json::array();
  for (const auto& o : f.operations) j["operations"].push_back(op_json(o, true));
  nlohmann::json out = {{"operations", nlohmann::json::array()},
                        {"exposed_wait_s", f.outside.exposed_us * 1e-6}};
  for (const auto& o : f.outside.operations) out["operations"].push_back(op_json(o, false));
  j["outside_steps"] = std::move(out);
  return j;
}

}  // namespace

std::string format_summary(const TraceSummary& s) {
  std::string o;
  o += fmt::format("trace {}\n", s.from_rank_files
                                     ? fmt::format("{} (per-rank files)", s.files.size())
                                     : s.files.front());
  o += fmt::format(
      "window: steps {} (trace.steps), world size {}, {} steps found (global steps {} to {}), "
      "{} ranks with steps\n",
      s.window.empty() ? "?" : s.window, s.world_size, s.steps_found, s.first_step, s.last_step,
      s.ranks.size());
  if (!s.unfinished.empty())
    o += fmt::format(
        "note: the run did not finish (killed or crashed: no trace.json, and {} of {} per-rank "
        "files end mid-stream); summarised from the steps they hold: read {}\n",
        s.unfinished.size(), s.files.size(), fmt::join(s.files, ", "));
  else if (s.from_rank_files)
    o += fmt::format(
        "note: no trace.json (the run was stopped before rank 0 merged the traces, or is still "
        "running): read {}\n",
        fmt::join(s.files, ", "));
  if (s.world_size > 0 && int(s.ranks.size()) != s.world_size)
    o += fmt::format("note: {} of world size {} ranks recorded a step\n", s.ranks.size(),
                     s.world_size);
  for (const auto& r : s.ranks)
    if (r.incomplete_events > 0)
      o += fmt::format(
          "note: rank {}: {} events of steps without a step event (the epoch's last loader call, "
          "or a stopped run's unfinished step) left out\n",
          r.rank, r.incomplete_events);

  const std::string time = s.virtual_time() ? "virtual time" : "wall time";
  if (s.virtual_time())
    o += fmt::format(
        "time base: {} (a virtual cluster: every time below is modelled, not measured)\n",
        s.time_base);
  o += fmt::format(
      "\nper step, mean over the window's steps, {} in ms (per rank, then the mean over "
      "ranks):\n",
      time);
  o += fmt::format("{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>13}{:>13}{:>10}\n", "", "step",
                   "compute", "forward", "backward", "optimizer", "data wait", "comm in", "exposed",
                   "overlap");
  o += fmt::format("{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>13}{:>13}{:>10}\n", "", "(ms)",
                   "(ms)", "(ms)", "(ms)", "(ms)", "(ms)", "flight (ms)", "wait (ms)", "");
  for (const auto& r : s.ranks) o += time_row(fmt::format("rank {}", r.rank), r.f);
  o += time_row("mean over ranks", s.mean);
  o += "compute = forward + backward + optimizer; comm in flight = union of the step's "
       "communication events;\nexposed wait = the compute thread's waits for communication; "
       "overlap = 1 - exposed wait / comm in flight.\n";
  // A negative overlap is a real measurement, not an error: say what it means.
  const bool negative = std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankFigures& r) {
    return r.f.overlap && *r.f.overlap < 0;
  });
  if (negative)
    o += "note: a negative overlap means the compute thread waited longer than communication was "
         "in flight:\nits wait also holds operations that were ready but not yet launched (the "
         "buckets' ready-to-launch delay)\nand its own wake-up after they completed: both grow "
         "when the ranks' threads outnumber the cores.\n";

  const auto slow = std::find_if(s.ranks.begin(), s.ranks.end(),
                                 [&](const RankFigures& r) { return r.rank == s.slowest_rank; });
  o += fmt::format(
      "slowest rank: {} (mean step time {} ms); skew between ranks: {:.1f} % of the mean step "
      "time ((slowest - fastest) / mean over ranks)\n",
      s.slowest_rank, ms(slow->f.step_us), s.skew * 100.0);

  if (!s.mean.operations.empty()) {
    const size_t w = name_width(s, false);
    o += fmt::format(
        "\ncommunication by operation, means over the window's steps, {} (per rank, then the "
        "mean over ranks; MB = 1e6 bytes, GB/s = 1e9 bytes/s):\n",
        time);
    o += fmt::format("{:<16}{:<{}}{:>10}{:>14}{:>14}{:>14}{:>14}{:>16}{:>16}\n", "", "operation", w,
                     "calls", "in flight", "in flight", "payload", "wire", "wire bandwidth",
                     "ready-to-launch");
    o += fmt::format("{:<16}{:<{}}{:>10}{:>14}{:>14}{:>14}{:>14}{:>16}{:>16}\n", "", "", w,
                     "per step", "per call (ms)", "per step (ms)", "per call (MB)", "per call (MB)",
                     "(GB/s)", "delay (ms)");
    for (const auto& r : s.ranks)
      for (const auto& op : r.f.operations) o += op_row(fmt::format("rank {}", r.rank), w, op);
    for (const auto& op : s.mean.operations) o += op_row("mean over ranks", w, op);
    o += "payload = args.bytes, what the rank handed to the communicator; wire = args.wire_bytes, "
         "what it put on its links\n(comm/wire_bytes.h: ring allreduce 2(P-1)/P n, allgather "
         "(P-1) b, point-to-point n); n/a: not in the trace;\nwire bandwidth = wire bytes / in "
         "flight per call (launch to completion); ready-to-launch delay: GradSync buckets only.\n";
  }
  if (!s.mean.outside.operations.empty()) {
    const size_t w = name_width(s, true);
    o += fmt::format(
        "\ncommunication outside the steps (completed at the end of an epoch, after its last "
        "step: end-of-epoch work, drain,\nevaluation; metrics.jsonl's comm_outside_epochs_*), "
        "totals over the trace, {} (per rank, then the mean over ranks):\n",
        time);
    o += fmt::format("{:<16}{:<{}}{:>10}{:>14}{:>14}{:>14}{:>14}{:>16}\n", "", "operation", w,
                     "calls", "in flight", "in flight", "payload", "wire", "wire bandwidth");
    o += fmt::format("{:<16}{:<{}}{:>10}{:>14}{:>14}{:>14}{:>14}{:>16}\n", "", "", w, "",
                     "per call (ms)", "total (ms)", "per call (MB)", "per call (MB)", "(GB/s)");
    for (const auto& r : s.ranks)
      for (const auto& op : r.f.outside.operations)
        o += outside_row(fmt::format("rank {}", r.rank), w, op);
    for (const auto& op : s.mean.outside.operations) o += outside_row("mean over ranks", w, op);
    for (const auto& r : s.ranks)
      o += fmt::format("rank {}: exposed wait outside the steps {} ms\n", r.rank,
                       ms(r.f.outside.exposed_us));
  }
  return o;
}

nlohmann::json summary_json(const TraceSummary& s) {
  nlohmann::json j;
  j["files"] = s.files;
  j["from_rank_files"] = s.from_rank_files;
  j["unfinished_files"] = s.unfinished;
  j["window"] = s.window;
  j["time_base"] = s.time_base;
  j["world_size"] = s.world_size;
  j["steps_found"] = s.steps_found;
  j["first_step"] = s.first_step;
  j["last_step"] = s.last_step;
  j["units"] = fmt::format(
      "per-step means over the window's steps (operations: per call, per step and in total, "
      "as named): *_s in seconds of {}, bytes in bytes, bandwidth in bytes per second, overlap "
      "and skew as fractions",
      s.virtual_time() ? "virtual time" : "wall time");
  j["ranks"] = nlohmann::json::array();
  for (const auto& r : s.ranks) {
    nlohmann::json rj = step_json(r.f);
    rj["rank"] = r.rank;
    rj["name"] = r.name;
    rj["incomplete_events"] = r.incomplete_events;
    j["ranks"].push_back(std::move(rj));
  }
  j["mean_over_ranks"] = step_json(s.mean);
  j["slowest_rank"] = s.slowest_rank;
  for (const auto& r : s.ranks)
    if (r.rank == s.slowest_rank) j["slowest_step_time_s"] = r.f.step_us * 1e-6;
  j["skew"] = s.skew;
  return j;
}

}  // namespace dplab::trace
