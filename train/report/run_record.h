// The run record: OUT/run.json, written by rank 0 before the first step, and the run header
// rank 0 prints. run.json holds every option the run read with its value and whether it is the
// default, and what the run ran on and with (docs/metrics_schema.md lists its fields). It is a
// valid --config: `dplab train --config OUT/run.json --out OTHER` reads its "options" section
// only (train/config/run_config.h) and repeats the run bitwise. The options `out`, `resume` and
// `resume.override` are left out of that section (listed under "run" instead), so a re-run
// neither resumes nor overwrites the recorded run: it is a fresh run of the same trajectory,
// which for a resumed run is the uninterrupted run's.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "dplab/core/options.h"
#include "dplab/train/config/registry.h"  // PluginRecord
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/state/checkpoint_store.h"  // WorldSpan

namespace dplab {

// What the driver knows once everything is set up.
struct RunFacts {
  std::string model;
  int64_t parameters = 0;  // trainable values
  std::string algo;
  // The algorithm's line for the header (StrategyEntry::run_note; "" for none).
  std::string algo_note;
  int64_t batch = 0;  // per rank
  int64_t accumulate_steps = 1;
  int64_t eval_batch = 0;  // per rank, as evaluation runs it (option eval.batch resolved)
  std::string device;
  int threads = 1;  // OpenMP threads per rank
  std::string data;
  int64_t train_samples = 0, test_samples = 0;
  std::chrono::system_clock::time_point start;
  // What the run's time figures are (train/virtual/run_clock.h): "wall" or "virtual:<platform>";
  // under a virtual cluster its shape (nodes x ranks per node) and a line for the header.
  std::string time_base = "wall";
  int cluster_nodes = 0, cluster_ranks_per_node = 0;
  std::string cluster_note;
  // The optimizer (option optim), whose defaults its unset keys took (OptimizerEntry::
  // defaults_from), and those keys with the values they took.
  std::string optimizer;
  std::string optimizer_defaults_from;
  std::map<std::string, std::string> optimizer_defaulted;
  double base_lr = 0;  // the lr the run uses (set, or the optimizer's default)
  // The plugins whose names the run's registry holds (Registry::plugins): run.json's "plugins".
  std::vector<PluginRecord> plugins;
};

// Keys of the run record's "options" section never holds (paths of this run's own output and
// of the run it continued).
bool run_record_excludes(const std::string& key);

// The record (every rank's host name in `hosts`, rank order).
nlohmann::json run_record(const Options& opt, const RunFacts& f,
                          const std::vector<std::string>& hosts);

// Collective over `ranks` (gathers the host names): rank 0 prints the header to `out` and,
// when the option out is set, writes OUT/run.json (replacing a predecessor's on --resume).
void record_run_start(const Options& opt, const RankGroup& ranks, const RunFacts& f,
                      std::ostream& out);

// Rank 0 adds "world_sizes" ([{from_step, world_size}], oldest first) to OUT/run.json, when
// the option out is set; called after the resume, which knows the run's earlier world sizes.
void record_world_sizes(const Options& opt, const RankGroup& ranks,
                        const std::vector<WorldSpan>& spans);

// Rank 0 adds "failure_lost_rank_s" and "recovery_s" (the final record's: virtual rank-seconds
// lost to fail events, the heals' virtual seconds) to OUT/run.json, when the option out is set;
// called at the end of a run that had fail events and went on with the live ranks.
void record_failures(const Options& opt, const RankGroup& ranks, double lost_rank_s,
                     double recovery_s);

// The summary's line on them, saying what each figure is: "failures: L rank-s of virtual time
// lost (...), recovery R s virtual (...)\n".
std::string failure_summary(double lost_rank_s, double recovery_s);

// "2026-11-24T04:26:23Z".
std::string utc_iso8601(std::chrono::system_clock::time_point t);

}  // namespace dplab
