#include "dplab/tools/plot/grouping.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::plot {

Band parse_band(const std::string& s) {
  if (s == "minmax") return Band::minmax;
  if (s == "std") return Band::std;
  if (s == "none") return Band::none;
  DPLAB_FAIL_OPTION("--band '{}': expected minmax, std or none", s);
}

std::string band_description(Band b) {
  switch (b) {
    case Band::minmax:
      return "band: min\u2013max over runs";
    case Band::std:
      return "band: mean \u00b1 1 std over runs";
    case Band::none:
      return "";
  }
  return "";
}

namespace {

struct Stats {
  double mean = 0, lo = 0, hi = 0;
};

// The mean of `v` and its band: min and max, mean -+ one sample standard deviation, or none
// (lo = hi = mean).
// Values near the largest double (hostile or diverged input) overflow the plain sums; the
// mean and the band are then taken of v / n and of scaled deviations, which cannot, and a band
// that still reaches past the largest double ends there.
Stats stats(const std::vector<double>& v, Band band) {
  constexpr double kMax = std::numeric_limits<double>::max();
  const double n = double(v.size());
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= n;
  if (!std::isfinite(s.mean)) {
    s.mean = 0;
    for (double x : v) s.mean += x / n;
  }
  s.lo = s.hi = s.mean;
  if (band == Band::minmax) {
    s.lo = *std::min_element(v.begin(), v.end());
    s.hi = *std::max_element(v.begin(), v.end());
  } else if (band == Band::std && v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    double sd = std::sqrt(ss / (n - 1));
    if (!std::isfinite(sd)) {  // halves of the deviations, scaled by the largest
      double scale = 0;
      for (double x : v) scale = std::max(scale, std::abs(x / 2 - s.mean / 2));
      ss = 0;
      for (double x : v) ss += ((x / 2 - s.mean / 2) / scale) * ((x / 2 - s.mean / 2) / scale);
      sd = 2 * scale * std::sqrt(ss / (n - 1));
    }
    s.lo = std::max(s.mean - sd, -kMax);
    s.hi = std::min(s.mean + sd, kMax);
  }
  return s;
}

}  // namespace

Series group_mean(const std::vector<Series>& runs, Band band, const std::string& label,
                  size_t* dropped) {
  DPLAB_CHECK(!runs.empty(), "group '{}' has no runs", label);
  size_t n = runs.front().x.size(), longest = 0;
  bool all_final = true;
  for (const auto& r : runs) {
    DPLAB_CHECK(!r.x.empty() && r.x.size() == r.y.size(),
                "group '{}': run '{}' has {} x and {} y values", label, r.label, r.x.size(),
                r.y.size());
    n = std::min(n, r.x.size());
    longest = std::max(longest, r.x.size());
    all_final &= r.final_point.has_value();
  }
  if (dropped) *dropped = longest - n;
  Series g;
  g.label = label;
  g.markers = runs.front().markers;
  std::vector<double> xs(runs.size()), ys(runs.size());
  for (size_t k = 0; k < n; ++k) {
    for (size_t r = 0; r < runs.size(); ++r) {
      xs[r] = runs[r].x[k];
      ys[r] = runs[r].y[k];
    }
    const Stats y = stats(ys, band);
    g.x.push_back(stats(xs, Band::none).mean);
    g.y.push_back(y.mean);
    if (band != Band::none) {
      g.lo.push_back(y.lo);
      g.hi.push_back(y.hi);
    }
  }
  if (all_final) {
    for (size_t r = 0; r < runs.size(); ++r) {
      xs[r] = runs[r].final_point->x;
      ys[r] = runs[r].final_point->y;
    }
    const Stats y = stats(ys, band);
    g.final_point = Series::Final{stats(xs, Band::none).mean, y.mean, y.lo, y.hi};
  }
  return g;
}

}  // namespace dplab::plot
