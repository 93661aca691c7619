// `dplab plot`: PNG line charts of metrics.jsonl files, one series per file.
#include <filesystem>
#include <iostream>
#include <set>

#include "dplab/core/error.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/metrics_series.h"

namespace dplab::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> files, labels;
  std::string x = "epoch", y = "test_acc", out, title, vline_key;
  int width = 800, height = 500;
};

// Legend names from the files' directories (runs are directories holding metrics.jsonl);
// when two runs share a directory name (seed0, seed0, ...) more of the path is used.
std::vector<std::string> default_labels(const std::vector<std::string>& files) {
  for (int depth = 1; depth <= 4; ++depth) {
    std::vector<std::string> r;
    for (const auto& f : files) {
      std::filesystem::path p = std::filesystem::absolute(f).lexically_normal().parent_path();
      std::vector<std::string> parts;
      for (int d = 0; d < depth && p.has_relative_path(); ++d, p = p.parent_path())
        parts.insert(parts.begin(), p.filename().string());
      std::string s;
      for (const auto& x : parts) s += (s.empty() ? "" : "/") + x;
      r.push_back(s);
    }
    if (std::set<std::string>(r.begin(), r.end()).size() == r.size() || depth == 4) return r;
  }
  return {};
}

}  // namespace

CommandSpec plot_command() {
  return {
      "plot", [](CLI::App& app) -> Action {
        auto a = std::make_shared<PlotArgs>();
        CLI::App* p = app.add_subcommand(
            "plot", "PNG line chart of metrics.jsonl files (one series per file)");
        p->add_option("files", a->files, "metrics.jsonl files (dplab train --out DIR)")->required();
        p->add_option("--x", a->x, "x key: epoch, time_s, step, ...")->capture_default_str();
        p->add_option("--y", a->y, "y key: test_acc, loss, train_acc, lr, ...")
            ->capture_default_str();
        p->add_option("--out", a->out, "output PNG file")->required();
        p->add_option("--title", a->title, "title above the chart");
        p->add_option("--label", a->labels,
                      "legend name per file, in order (default: the file's directory name)");
        p->add_option("--vline-key", a->vline_key,
                      "dashed vertical marker where this key changes value (e.g. algo.stage)");
        p->add_option("--width", a->width, "image width in pixels")->capture_default_str();
        p->add_option("--height", a->height, "image height in pixels")->capture_default_str();
        return [a]() {
          if (!a->labels.empty() && a->labels.size() != a->files.size())
            throw UsageError(fmt::format("--label given {} times for {} files", a->labels.size(),
                                         a->files.size()));
          plot::ChartSpec spec;
          spec.width = a->width;
          spec.height = a->height;
          spec.title = a->title;
          spec.x_label = a->x;
          spec.y_label = a->y;
          const auto labels = a->labels.empty() ? default_labels(a->files) : a->labels;
          bool any_marker_key = false;
          for (size_t i = 0; i < a->files.size(); ++i) {
            bool found = false;
            spec.series.push_back(
                plot::read_metrics_series(a->files[i], a->x, a->y, a->vline_key, &found));
            spec.series.back().label = labels[i];
            any_marker_key |= found;
          }
          DPLAB_CHECK(a->vline_key.empty() || any_marker_key,
                      "--vline-key {}: no record of any file has this numeric key", a->vline_key);
          plot::write_png(plot::render_chart(spec), a->out);
          std::cout << "wrote " << a->out << "\n";
          return 0;
        };
      }};
}

}  // namespace dplab::cli
