#include "dplab/tools/plot/figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "dplab/core/error.h"
#include "dplab/tools/plot/metrics_series.h"
#include "dplab/tools/plot/runs.h"

namespace dplab::plot {
namespace {

struct Run {
  std::string dir, label;
  MetricsFile metrics;
};

std::string series_label(const std::string& name, const std::string& y_key, size_t n_y) {
  return n_y > 1 ? name + ": " + y_key : name;
}

}  // namespace

Figure build_figure(const FigureRequest& req) {
  DPLAB_CHECK(!req.runs.empty(), "no runs to plot");
  DPLAB_CHECK(!req.y_keys.empty(), "no y key to plot");
  DPLAB_CHECK(req.labels.empty() || req.labels.size() == req.runs.size(),
              "--label given {} times for {} runs", req.labels.size(), req.runs.size());
  std::vector<Run> runs;
  std::vector<std::string> dirs;
  for (const auto& arg : req.runs) {
    const std::string path = metrics_path_of(arg);
    // A bare file name ("metrics.jsonl") lies in the current directory: its run directory is
    // ".", not "" (which has no absolute form to name the run by).
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    dirs.push_back(dir.empty() ? std::string(".") : dir.string());
    runs.push_back({dirs.back(), "", read_metrics_file(path)});
  }
  const auto labels = req.labels.empty() ? default_labels(dirs) : req.labels;
  for (size_t i = 0; i < runs.size(); ++i) runs[i].label = labels[i];

  Figure fig;
  ChartSpec& spec = fig.spec;
  spec.width = req.width;
  spec.height = req.height;
  spec.scale = req.scale;
  spec.title = req.title;
  bool any_marker_key = false, elapsed_computed = false;
  // series[run][y key]
  std::vector<std::vector<Series>> read(runs.size());
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& y : req.y_keys) {
      auto m = series_of(runs[i].metrics, {req.x_key, y, req.kind, req.marker_key});
      any_marker_key |= m.marker_key_found;
      elapsed_computed |= m.elapsed_from_time_s;
      // The final record describes the run after its last epoch: it is drawn at the last x.
      if (req.with_final && m.final_y)
        m.series.final_point = Series::Final{m.series.x.back(), *m.final_y, *m.final_y, *m.final_y};
      read[i].push_back(std::move(m.series));
    }
  DPLAB_CHECK(req.marker_key.empty() || any_marker_key,
              "--vline-key {}: no record of any run has this numeric key", req.marker_key);

  if (req.group_by.empty()) {
    for (size_t i = 0; i < runs.size(); ++i)
      for (size_t k = 0; k < req.y_keys.size(); ++k) {
        spec.series.push_back(std::move(read[i][k]));
        spec.series.back().label = series_label(runs[i].label, req.y_keys[k], req.y_keys.size());
      }
  } else {
    // Groups in order of first appearance; a run without run.json falls back to its label or
    // directory path without a trailing seed.
    std::vector<std::string> order;
    std::map<std::string, std::vector<size_t>> members;
    std::vector<std::string> fallback_dirs;
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string name;
      if (!run_option(runs[i].dir, req.group_by, &name)) {
        name = strip_seed(req.labels.empty() ? runs[i].dir : runs[i].label);
        fig.notes.push_back(fmt::format("{} has no run.json: grouped as '{}'", runs[i].dir, name));
      }
      if (!members.count(name)) order.push_back(name);
      members[name].push_back(i);
    }
    // Directory-path group names are shortened like legend names.
    std::vector<std::string> shown = order;
    if (req.labels.empty()) {
      bool all_paths = true;
      for (const auto& g : order) {
        std::string v;
        all_paths &= !run_option(runs[members[g].front()].dir, req.group_by, &v);
      }
      if (all_paths) shown = default_labels(order);
    }
    for (size_t g = 0; g < order.size(); ++g) {
      const auto& idx = members[order[g]];
      for (size_t k = 0; k < req.y_keys.size(); ++k) {
        std::vector<Series> group;
        for (size_t i : idx) group.push_back(read[i][k]);
        const std::string name =
            fmt::format("{} ({} run{})", series_label(shown[g], req.y_keys[k], req.y_keys.size()),
                        idx.size(), idx.size() == 1 ? "" : "s");
        size_t dropped = 0;
        spec.series.push_back(group_mean(group, req.band, name, &dropped));
        if (dropped)
          fig.notes.push_back(fmt::format(
              "group '{}': runs have different lengths; the mean covers the first {} points",
              shown[g], spec.series.back().x.size()));
      }
    }
    if (req.band != Band::none) spec.notes.push_back(band_description(req.band));
  }
  if (req.with_final) {
    const bool any = std::any_of(spec.series.begin(), spec.series.end(),
                                 [](const Series& s) { return s.final_point.has_value(); });
    if (any)
      spec.notes.push_back(req.group_by.empty() ? "hollow circle: the run's final record"
                                                : "hollow circle: mean of the final records");
    else
      fig.notes.push_back("--final: no run has a final record with the y key");
  }

  spec.x_label = !req.x_label.empty() ? req.x_label
                 : req.x_key == kElapsedKey && elapsed_computed
                     ? fmt::format("{} (running sum of {} time_s)", req.x_key, req.kind)
                     : req.x_key;
  if (!req.y_label.empty()) {
    spec.y_label = req.y_label;
  } else {
    for (const auto& y : req.y_keys) spec.y_label += (spec.y_label.empty() ? "" : ", ") + y;
    if (req.y_keys.size() == 1 && req.y_keys[0] == kElapsedKey && elapsed_computed)
      spec.y_label += fmt::format(" (running sum of {} time_s)", req.kind);
  }
  return fig;
}

}  // namespace dplab::plot
