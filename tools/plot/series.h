// What a chart draws: series of (x, y) points, optionally with a band (a shaded range around
// the line, e.g. min-max over seeds) and vertical markers (e.g. where a training stage begins).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace dplab::plot {

struct VMarker {
  double x = 0;
  std::string text;  // written above the plot area; may be empty
};

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::vector<VMarker> markers;  // drawn dashed, in the series' colour
  // The band: either empty or as long as x; drawn shaded between lo and hi.
  std::vector<double> lo, hi;
  // The run's final record (what the run ended with, e.g. after a final model average), drawn
  // as a hollow marker apart from the line; lo and hi are its band (equal to y for one run).
  struct Final {
    double x = 0, y = 0, lo = 0, hi = 0;
  };
  std::optional<Final> final_point;
};

}  // namespace dplab::plot
