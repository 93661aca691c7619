// Several runs of one configuration (seeds) drawn as one line: the mean and a band.
// Pure arithmetic, tested without drawing.
#pragma once
#include <string>
#include <vector>

#include "dplab/tools/plot/series.h"

namespace dplab::plot {

enum class Band {
  minmax,  // the band spans the lowest and highest run at each point
  std,     // mean +- one sample standard deviation (divisor n - 1; 0 for a single run)
  none,
};

// Parses "minmax", "std" or "none"; throws dplab::UsageError naming the accepted values.
Band parse_band(const std::string& s);
// How the legend names the band ("min-max over runs", "mean \u00b1 1 std").
std::string band_description(Band b);

// The mean of `runs` point by point: the k-th points of all runs are paired (the k-th epoch
// record of every seed), x and y are their means, and the band is taken over the runs' y.
// Runs of different lengths are cut to the shortest; `dropped` (when given) receives how
// many points the longest run lost. Markers are the first run's. When every run has a final
// point, the group's is their mean with the same kind of band. Throws for no runs or an empty
// run.
Series group_mean(const std::vector<Series>& runs, Band band, const std::string& label,
                  size_t* dropped = nullptr);

}  // namespace dplab::plot
