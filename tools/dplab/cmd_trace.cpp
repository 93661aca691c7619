// `dplab trace OUT`: where each step's time goes, from the trace `dplab train --trace` wrote
// (docs/trace_summary.md): a summary table (or --json), or with --out a timeline figure.
#include <iostream>
#include <nlohmann/json.hpp>

#include "dplab/tools/dplab/command.h"
#include "dplab/tools/trace/timeline_figure.h"
#include "dplab/tools/trace/trace_file.h"
#include "dplab/tools/trace/trace_summary.h"

namespace dplab::cli {
namespace {

struct TraceArgs {
  std::string where, out, steps;
  bool json = false;
};

int run_trace(const TraceArgs& a) {
  if (!a.out.empty()) {
    trace::check_figure_path(a.out);  // before reading a large trace
    trace::TimelineSpec spec;
    if (!a.steps.empty())
      std::tie(spec.first_step, spec.end_step) = trace::parse_step_range(a.steps, "--steps");
    const trace::TraceData data = trace::read_trace(a.where);
    const trace::TimelineLayout layout = trace::layout_timeline(data, spec);
    trace::write_figure(layout, a.out);
    std::cout << fmt::format(
        "wrote {}: steps {} to {} of {} ranks{}{}\n", a.out, layout.first_step, layout.end_step - 1,
        trace::summarize(data).ranks.size(), data.virtual_time() ? ", virtual time" : "",
        !data.unfinished.empty() ? " (from the per-rank files of a run that did not finish)"
        : data.from_rank_files   ? " (from the per-rank files: no trace.json)"
                                 : "");
    return 0;
  }
  if (!a.steps.empty()) throw UsageError("--steps chooses the steps of the figure: give --out too");
  const trace::TraceSummary s = trace::summarize(trace::read_trace(a.where));
  if (a.json)
    std::cout << trace::summary_json(s).dump(1) << "\n";
  else
    std::cout << trace::format_summary(s);
  return 0;
}

}  // namespace

CommandSpec trace_command() {
  return {"trace", [](CLI::App& app) -> Action {
            auto a = std::make_shared<TraceArgs>();
            CLI::App* t = app.add_subcommand(
                "trace",
                "where each step's time goes: summary of a --trace run (per rank and mean over "
                "ranks), or a timeline figure with --out");
            t->add_option("out_dir", a->where,
                          "run directory (holding trace.json, or trace/rank_*.json of a stopped "
                          "run) or a trace JSON file")
                ->required();
            auto* json = t->add_flag("--json", a->json,
                                     "print the summary as one JSON object (seconds, bytes)");
            t->add_option("--out", a->out,
                          "draw a timeline figure to this file instead: .svg, .pdf or .png")
                ->excludes(json);
            t->add_option("--steps", a->steps,
                          "the figure's global steps A:B (A <= step < B); default: the first 3 "
                          "steps of the trace");
            return [a]() { return run_trace(*a); };
          }};
}

}  // namespace dplab::cli
