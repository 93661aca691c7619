// From runs to a chart: reads every run's metrics, makes one series per run and y key (or, with
// a group key, one mean-and-band series per group and y key), and names the axes.
#pragma once
#include <string>
#include <vector>

#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/grouping.h"

namespace dplab::plot {

struct FigureRequest {
  std::vector<std::string> runs;    // metrics.jsonl files or run directories
  std::vector<std::string> labels;  // one per run, or empty for default_labels
  std::string x_key = "epoch";
  std::vector<std::string> y_keys{"test_acc"};
  std::string kind = "epoch";
  std::string marker_key;   // --vline-key
  std::string group_by;     // empty: one series per run
  bool with_final = false;  // also mark each run's final record (kind "final") at its last x
  Band band = Band::minmax;
  std::string title, x_label, y_label;  // empty axis labels: the keys
  int width = 800, height = 500;
  double scale = 1;  // PNG only: pixels per unit
};

struct Figure {
  ChartSpec spec;
  std::vector<std::string> notes;     // what the caller should tell the user (grouping fallbacks,
                                      // runs drawn without a key they lack)
  std::vector<std::string> warnings;  // input skipped ("FILE:LINE: ..." of a torn last line)
};

// Throws dplab::Error for unreadable runs, and dplab::UsageError for an --x, --y or --vline-key
// key that no run has (a run without an --x or --y key is left out of that key's lines, and a
// note names it).
Figure build_figure(const FigureRequest& request);

}  // namespace dplab::plot
