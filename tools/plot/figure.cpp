#include "dplab/tools/plot/figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"
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

// The keys a run may lack, in the order their notes are printed: --x, then each --y.
std::vector<std::pair<const char*, std::string>> lacking_order(const FigureRequest& req) {
  std::vector<std::pair<const char*, std::string>> r{{"--x", req.x_key}};
  for (const auto& y : req.y_keys)
    if (y != req.x_key) r.emplace_back("--y", y);
  return r;
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
  for (const auto& r : runs)
    fig.warnings.insert(fig.warnings.end(), r.metrics.warnings.begin(), r.metrics.warnings.end());
  bool any_marker_key = false, elapsed_computed = false;
  // series[run][y key]; none where the run lacks the x or the y key, which leaves the run out
  // of that key's lines (a run of another algorithm without its test_acc_consensus), with a note.
  std::vector<std::vector<std::optional<Series>>> read(runs.size());
  std::map<std::string, std::vector<size_t>> lacking;  // key -> runs without it
  std::set<std::string> keys_there;                    // of the runs lacking a key
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& y : req.y_keys) {
      read[i].emplace_back();
      MetricsSeries m;
      try {
        m = series_of(runs[i].metrics, {req.x_key, y, req.kind, req.marker_key});
      } catch (const MissingKey& e) {
        auto& l = lacking[e.key];
        if (l.empty() || l.back() != i) l.push_back(i);
        keys_there.insert(e.keys.begin(), e.keys.end());
        continue;
      }
      any_marker_key |= m.marker_key_found;
      elapsed_computed |= m.elapsed_from_time_s;
      // The final record describes the run after its last epoch: it is drawn at the last x.
      if (req.with_final && m.final_y)
        m.series.final_point = Series::Final{m.series.x.back(), *m.final_y, *m.final_y, *m.final_y};
      read[i].back() = std::move(m.series);
    }
  // A key no run has is a mistake in the command line: exit status 2, no source location.
  std::string keys_text;
  for (const auto& k : keys_there) keys_text += (keys_text.empty() ? "" : ", ") + k;
  const auto no_run_has = [&](const char* flag, const std::string& key) {
    return UsageError(fmt::format(
        "{} {}: no run has this numeric key in its records of kind '{}' (their keys: {})", flag,
        key, req.kind, keys_text.empty() ? "none" : keys_text));
  };
  if (lacking[req.x_key].size() == runs.size()) throw no_run_has("--x", req.x_key);
  for (size_t k = 0; k < req.y_keys.size(); ++k)
    if (std::none_of(read.begin(), read.end(), [&](const auto& r) { return r[k].has_value(); }))
      throw no_run_has("--y", req.y_keys[k]);
  for (const auto& [flag, key] : lacking_order(req)) {
    const auto it = lacking.find(key);
    if (it == lacking.end() || it->second.empty()) continue;
    std::string names;
    for (size_t i : it->second) names += (names.empty() ? "" : ", ") + runs[i].dir;
    fig.notes.push_back(
        fmt::format("{} {}: not drawn for {} of {} runs, which lack this numeric key: {}", flag,
                    key, it->second.size(), runs.size(), names));
  }
  DPLAB_CHECK_OPTION(req.marker_key.empty() || any_marker_key,
                     "--vline-key {}: no record of any run has this numeric key", req.marker_key);

  if (req.group_by.empty()) {
    for (size_t i = 0; i < runs.size(); ++i)
      for (size_t k = 0; k < req.y_keys.size(); ++k) {
        if (!read[i][k]) continue;
        spec.series.push_back(std::move(*read[i][k]));
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
        for (size_t i : idx)
          if (read[i][k]) group.push_back(*read[i][k]);
        if (group.empty()) continue;  // no run of the group has the key (noted above)
        const std::string name =
            fmt::format("{} ({} run{})", series_label(shown[g], req.y_keys[k], req.y_keys.size()),
                        group.size(), group.size() == 1 ? "" : "s");
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
