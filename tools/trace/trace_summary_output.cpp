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

std::string bucket_row(const std::string& label, const BucketFigures& b) {
  const std::string bw =
      std::isfinite(b.bandwidth_Bps) ? fmt::format("{:.3f}", b.bandwidth_Bps / 1e9) : "n/a";
  return fmt::format("{:<16}{:>7}{:>18}{:>15}{:>12.3f}{:>17}\n", label, b.bucket, ms(b.delay_us),
                     ms(b.duration_us), b.bytes / 1e6, bw);
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
  j["buckets"] = nlohmann::json::array();
  for (const auto& b : f.buckets)
    j["buckets"].push_back(
        {{"bucket", b.bucket},
         {"events", b.events},
         {"ready_to_launch_s", b.delay_us * 1e-6},
         {"duration_s", b.duration_us * 1e-6},
         {"bytes", b.bytes},
         {"bandwidth_bytes_per_s", std::isfinite(b.bandwidth_Bps) ? nlohmann::json(b.bandwidth_Bps)
                                                                  : nlohmann::json(nullptr)}});
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

  o += "\nper step, mean over the window's steps, wall time in ms (per rank, then the mean over "
       "ranks):\n";
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

  if (!s.mean.buckets.empty()) {
    o += "\nGradSync buckets, mean over the window's steps (per rank, then the mean over ranks; "
         "MB = 1e6 bytes, GB/s = 1e9 bytes/s):\n";
    o += fmt::format("{:<16}{:>7}{:>18}{:>15}{:>12}{:>17}\n", "", "bucket", "ready-to-launch",
                     "duration", "size", "bandwidth");
    o += fmt::format("{:<16}{:>7}{:>18}{:>15}{:>12}{:>17}\n", "", "", "delay (ms)", "(ms)", "(MB)",
                     "(GB/s)");
    for (const auto& r : s.ranks)
      for (const auto& b : r.f.buckets) o += bucket_row(fmt::format("rank {}", r.rank), b);
    for (const auto& b : s.mean.buckets) o += bucket_row("mean over ranks", b);
    o += "bandwidth = bytes this rank sends / duration (launch to completion).\n";
  }
  return o;
}

nlohmann::json summary_json(const TraceSummary& s) {
  nlohmann::json j;
  j["files"] = s.files;
  j["from_rank_files"] = s.from_rank_files;
  j["unfinished_files"] = s.unfinished;
  j["window"] = s.window;
  j["world_size"] = s.world_size;
  j["steps_found"] = s.steps_found;
  j["first_step"] = s.first_step;
  j["last_step"] = s.last_step;
  j["units"] =
      "per-step means over the window's steps: *_s in seconds of wall time, bytes in bytes, "
      "bandwidth in bytes per second, overlap and skew as fractions";
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
