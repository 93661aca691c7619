#include "dplab/train/report/run_reporting.h"

#include <fmt/format.h>

#include <filesystem>

namespace dplab {
namespace {

MetricsWriter open_metrics(const ReportingOptions& o, const std::string& name) {
  std::filesystem::create_directories(o.out_dir);
  return MetricsWriter((std::filesystem::path(o.out_dir) / name).string(), o.append);
}

}  // namespace

RunReporting::RunReporting(const ReportingOptions& o, const RankGroup& ranks, RunClock clock,
                           RunClock::Mark origin, std::ostream& summary, std::ostream& progress)
    : clock_(std::move(clock)),
      origin_(origin),
      metrics_(!o.out_dir.empty() && ranks.rank() == 0 ? open_metrics(o, "metrics.jsonl")
                                                       : MetricsWriter()),
      rank_metrics_(!o.out_dir.empty() && ranks.size() > 1
                        ? open_metrics(o, fmt::format("rank_{}.jsonl", ranks.rank()))
                        : MetricsWriter()),
      report_(ranks, metrics_, rank_metrics_, clock_, origin),
      step_log_(o.metrics_every_steps, ranks, metrics_, rank_metrics_, clock_, origin),
      // Under several ranks the progress line's loss and rate are rank 0's own (the epoch line
      // gives the global ones).
      progress_(ranks.rank() == 0 ? o.progress : Progress::Mode::off, o.every_percent, progress,
                ranks.size() > 1 ? " (rank 0's own)" : ""),
      summary_(summary),
      messages_(progress) {}

double RunReporting::elapsed_s() const {
  return clock_.since(origin_);
}

}  // namespace dplab
