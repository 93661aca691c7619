// Fuzz target: `dplab plot`'s metrics reader (tools/plot/metrics_series.h) through
// build_figure, what the command runs on its run arguments: read_metrics_file, series_of for
// every y key (one series per run, and the mean of a group of two runs of the same file), the
// --final and --vline-key records; then the chart layout of whatever was read, which must lay
// out without an error (a rejected file is a dplab::Error from reading, never from drawing).
#include "dplab/core/error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/figure.h"
#include "dplab/tools/plot/metrics_series.h"
#include "fuzz_input.h"

namespace {

void lay_out(const dplab::plot::Figure& fig) {
  (void)dplab::plot::layout_chart(fig.spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("metrics.jsonl", data, size);
  dplab::plot::FigureRequest req;
  req.runs = {path};
  req.y_keys = {"test_acc", "loss"};
  req.marker_key = "algo.stage";
  req.with_final = true;
  for (const char* x : {"epoch", "elapsed_s"}) {
    req.x_key = x;
    dplab::plot::Figure fig;
    try {
      fig = dplab::plot::build_figure(req);
    } catch (const dplab::Error&) {
      continue;
    }
    lay_out(fig);
  }
  // Step records against step, grouped: two runs of the same file form one mean.
  req.runs = {path, path};
  req.kind = "step";
  req.x_key = "step";
  req.group_by = "algo";
  req.band = dplab::plot::Band::std;
  dplab::plot::Figure fig;
  try {
    fig = dplab::plot::build_figure(req);
  } catch (const dplab::Error&) {
    return 0;
  }
  lay_out(fig);
  return 0;
}
