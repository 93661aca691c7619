// `dplab plot`: line charts of runs' metrics.jsonl as PNG, SVG or PDF (by the output's
// extension), one series per run and y key, or one mean-and-band series per group of runs.
#include <iostream>

#include "dplab/core/error.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/plot/figure.h"
#include "dplab/tools/plot/surface.h"

namespace dplab::cli {
namespace {

struct PlotArgs {
  plot::FigureRequest req;
  std::vector<std::string> y_keys;
  std::string out, band = "minmax";
};

}  // namespace

CommandSpec plot_command() {
  return {
      "plot", [](CLI::App& app) -> Action {
        auto a = std::make_shared<PlotArgs>();
        plot::FigureRequest& r = a->req;
        CLI::App* p = app.add_subcommand(
            "plot",
            "line chart of runs' metrics (PNG, SVG or PDF by --out's extension): one series per "
            "run and --y key, or with --group-by the mean of each group of runs with a band");
        p->add_option("runs", r.runs,
                      "run directories (dplab train --out DIR) or metrics.jsonl files")
            ->required();
        p->add_option("--out", a->out, "output figure: FILE.png, FILE.svg or FILE.pdf")->required();
        p->add_option("--x", r.x_key,
                      "x key of the records: epoch, step, elapsed_s (seconds since the start; "
                      "the running sum of time_s for files without it), any numeric key")
            ->capture_default_str();
        p->add_option("--y", a->y_keys,
                      "y key (repeat for several: test_acc, loss, train_acc, lr, ...; default "
                      "test_acc)");
        p->add_option("--kind", r.kind,
                      "plot only records of this kind (epoch, step; the final record is its own "
                      "kind and never mixed in)")
            ->capture_default_str();
        p->add_option("--group-by", r.group_by,
                      "draw runs with the same value of this option (from RUN/run.json's "
                      "options, e.g. algo) as one mean line with a band; runs without run.json "
                      "group by their --label or directory with a trailing seedN removed");
        p->add_option("--band", a->band,
                      "band of a group: minmax (lowest to highest run), std (mean +- one sample "
                      "standard deviation) or none")
            ->capture_default_str();
        p->add_flag("--final", r.with_final,
                    "also mark each run's final record (kind final: e.g. the accuracy after a "
                    "final model average) as a hollow circle at the last point, not joined to "
                    "the line");
        p->add_option("--label", r.labels,
                      "legend name per run, in order (default: the run's directory name)");
        p->add_option("--title", r.title, "title above the chart");
        p->add_option("--x-label", r.x_label, "x axis label (default: the x key)");
        p->add_option("--y-label", r.y_label, "y axis label (default: the y keys)");
        p->add_option("--vline-key", r.marker_key,
                      "dashed vertical marker where this key changes value (e.g. algo.stage)");
        p->add_option("--width", r.width, "width in pixels (PNG) or points (SVG, PDF)")
            ->capture_default_str();
        p->add_option("--height", r.height, "height in pixels (PNG) or points (SVG, PDF)")
            ->capture_default_str();
        p->add_option("--scale", r.scale,
                      "PNG only: pixels per unit (2: the same figure at twice the resolution, "
                      "--width x --height times 2 pixels)")
            ->capture_default_str();
        return [a]() {
          plot::FigureRequest& r = a->req;
          if (!r.labels.empty() && r.labels.size() != r.runs.size())
            throw UsageError(
                fmt::format("--label given {} times for {} runs", r.labels.size(), r.runs.size()));
          plot::format_for_path(a->out);  // refuse an unknown extension before reading anything
          if (!a->y_keys.empty()) r.y_keys = a->y_keys;
          r.band = plot::parse_band(a->band);
          const plot::Figure fig = plot::build_figure(r);
          for (const auto& w : fig.warnings) std::cerr << "warning: " << w << "\n";
          for (const auto& n : fig.notes) std::cerr << "note: " << n << "\n";
          plot::render_chart(fig.spec, a->out);
          std::cout << "wrote " << a->out << "\n";
          return 0;
        };
      }};
}

}  // namespace dplab::cli
