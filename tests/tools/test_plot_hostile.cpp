// dplab plot on damaged and hostile metrics (issue #38): values a denormal or a float step
// apart, values near the largest double, numbers beyond it, a --y key some runs lack, torn last
// lines, and series of a million points. Every input is made here; each case once crashed,
// hung, refused a drawable figure or gave an error without its file and line.
#include <cairo.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/harness.h"
#include "data/temp_dir.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/figure.h"
#include "dplab/tools/plot/metrics_series.h"
#include "dplab/tools/plot/ticks.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::error_of;
using test::run_dplab;
using test::ScopedTempDir;

constexpr double kMax = std::numeric_limits<double>::max();

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Epoch records 1, 2, ... with `key` (written as given, so "5e-324" stays that text).
std::string records(const std::vector<std::string>& values, const std::string& key = "test_acc") {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += fmt::format("{{\"kind\":\"epoch\",\"epoch\":{},\"time_s\":1,\"{}\":{}}}\n", i + 1, key,
                     values[i]);
  return s;
}

// The layout of a figure is sound: finite axes that enclose every finite point, ticks finite,
// increasing and few (at least two on y).
void expect_sound_layout(const plot::ChartSpec& spec) {
  const plot::ChartLayout L = plot::layout_chart(spec);
  for (double v : {L.x_lo, L.x_hi, L.y_lo, L.y_hi}) EXPECT_TRUE(std::isfinite(v)) << v;
  EXPECT_LT(L.x_lo, L.x_hi);
  EXPECT_LT(L.y_lo, L.y_hi);
  EXPECT_GE(L.y_ticks.size(), 2u);
  EXPECT_LE(L.y_ticks.size(), 24u);  // target + 3, about 20 near the largest double
  EXPECT_LE(L.x_ticks.size(), 30u);
  for (const auto* t : {&L.x_ticks, &L.y_ticks})
    for (size_t k = 0; k < t->size(); ++k) {
      EXPECT_TRUE(std::isfinite((*t)[k]));
      if (k > 0) {
        EXPECT_GT((*t)[k], (*t)[k - 1]);
      }
    }
  for (const auto& s : spec.series)
    for (size_t k = 0; k < s.x.size(); ++k) {
      EXPECT_GE(L.px(s.x[k]), L.plot.x0 - 1e-6) << s.x[k];
      EXPECT_LE(L.px(s.x[k]), L.plot.x1 + 1e-6) << s.x[k];
      EXPECT_GE(L.py(s.y[k]), L.plot.y0 - 1e-6) << s.y[k];
      EXPECT_LE(L.py(s.y[k]), L.plot.y1 + 1e-6) << s.y[k];
    }
}

plot::Figure figure_of(const std::vector<std::string>& runs, const std::string& y = "test_acc",
                       const std::string& x = "epoch") {
  plot::FigureRequest req;
  req.runs = runs;
  req.x_key = x;
  req.y_keys = {y};
  return plot::build_figure(req);
}

// Issue #38 item 1: test_acc 0 and 5e-324 (a denormal) crashed layout_chart (SIGSEGV): the tick
// step underflowed to 0 and the tick list came back empty.
TEST(PlotHostile, ZeroAndADenormalLayOutAndDraw) {
  ScopedTempDir dir("plot-denormal");
  const auto f = dir.file("run/metrics.jsonl");
  write_file(f, records({"0", "5e-324"}));
  const auto fig = figure_of({f});
  ASSERT_EQ(fig.spec.series.size(), 1u);
  ASSERT_GT(fig.spec.series[0].y[1], 0.0);  // the denormal survived the reading
  expect_sound_layout(fig.spec);
  plot::render_chart(fig.spec, dir.file("f.png"));  // cairo in no error state
  const auto r = run_dplab(fmt::format("plot {} --out {}", f, dir.file("cli.png")), dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("cli.png")));
}

// Item 2: two values a float step apart never finished (the tick loop's k += 1 stopped moving
// near 1e16, taking ~300 MB/s). Ticks are now few and finite for any finite range.
TEST(PlotHostile, ValuesAFloatStepApartHaveFewFiniteTicks) {
  ScopedTempDir dir("plot-ulp");
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"1.0", "1.0000000000000002"}, {"1000", "1000.0000000000001"}}) {
    const auto f = dir.file(a + "/metrics.jsonl");
    write_file(f, records({a, b}));
    const auto fig = figure_of({f});
    ASSERT_NE(fig.spec.series[0].y[0], fig.spec.series[0].y[1]) << a;  // one step apart
    expect_sound_layout(fig.spec);
    const auto r = run_dplab(fmt::format("plot {} --out {}", f, dir.file(a + ".svg")), dir.path);
    EXPECT_EQ(r.status, 0) << r.err;
  }
  // nice_ticks alone: at most target + 3 finite increasing ticks, at least two, whatever the
  // range's width against its magnitude.
  const double one_up = std::nextafter(1.0, 2.0), big = 1e16;
  for (const auto& [lo, hi] :
       std::vector<std::pair<double, double>>{{1.0, one_up},
                                              {1000.0, std::nextafter(1000.0, 2000.0)},
                                              {big, std::nextafter(big, 2 * big)},
                                              {0.0, 5e-324},
                                              {-kMax, kMax},
                                              {kMax / 2, kMax},
                                              {-1e308, 1e308}}) {
    for (int target : {1, 5, 10}) {
      double step = 0;
      const auto t = plot::nice_ticks(lo, hi, target, &step);
      EXPECT_GE(t.size(), 2u) << lo << " " << hi;
      EXPECT_LE(t.size(), size_t(target) + 20) << lo << " " << hi;
      EXPECT_GT(step, 0) << lo << " " << hi;
      for (size_t k = 0; k < t.size(); ++k) {
        EXPECT_TRUE(std::isfinite(t[k])) << lo << " " << hi;
        if (k > 0) {
          EXPECT_GT(t[k], t[k - 1]) << lo << " " << hi;
        }
        EXPECT_FALSE(plot::tick_label(t[k], step).empty());
      }
    }
  }
  // A zero step would ask for infinitely many decimals (an int of infinity: undefined): 17.
  EXPECT_EQ(plot::tick_label(1, 0), "1.00000000000000000");
}

// Item 3: cairo's stroke of a long zig-zag grows about quadratically (100k records: minutes on
// noisy data, 17 s on smooth), so a series is drawn from at most four points per pixel column.
// The reduction is one pass, and what it keeps is bounded by the columns, not the records.
TEST(PlotHostile, LongSeriesKeepFourPointsPerPixelColumn) {
  const size_t n = 1'000'000;
  std::vector<double> x(n), y(n);
  uint64_t h = 88172645463325252ull;
  for (size_t k = 0; k < n; ++k) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    x[k] = 50 + 700.0 * double(k) / double(n);  // 700 columns of ~1429 records each
    y[k] = 30 + double(h % 400);                // noise over 400 rows
  }
  y[123456] = -5;  // the lowest and the highest point are kept wherever they are
  y[654321] = 900;
  const auto keep = plot::polyline_points(x, y, 1.0);
  EXPECT_LE(keep.size(), 4u * 701);
  EXPECT_GE(keep.size(), 2u * 700);
  EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
  EXPECT_EQ(std::adjacent_find(keep.begin(), keep.end()), keep.end());  // no repeats
  EXPECT_EQ(keep.front(), 0u);
  EXPECT_EQ(keep.back(), n - 1);
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), size_t(123456)));
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), size_t(654321)));
  // Every column keeps its own lowest and highest point, so the drawn line spans what the data
  // spans there.
  for (size_t c = 0; c < 700; c += 97) {
    size_t lo = SIZE_MAX, hi = SIZE_MAX;
    for (size_t k = 0; k < n; ++k)
      if (std::floor(x[k]) == 50 + double(c)) {
        if (lo == SIZE_MAX || y[k] < y[lo]) lo = k;
        if (hi == SIZE_MAX || y[k] > y[hi]) hi = k;
      }
    EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), lo)) << c;
    EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), hi)) << c;
  }
  // Short series are drawn whole; non-finite points are left out; x that goes back keeps every
  // turn (a run ends where the column changes).
  EXPECT_EQ(plot::polyline_points({1, 5, 9}, {3, 1, 2}, 1.0), (std::vector<size_t>{0, 1, 2}));
  const double nan = std::nan("");
  EXPECT_EQ(plot::polyline_points({1, nan, 3, 4},
                                  {1, 2, std::numeric_limits<double>::infinity(), 4}, 1.0),
            (std::vector<size_t>{0, 3}));
  EXPECT_EQ(plot::polyline_points({1, 9, 1.5, 9.5}, {0, 0, 1, 1}, 1.0),
            (std::vector<size_t>{0, 1, 2, 3}));
  // A drawn million-point series: the PNG is written (the reduction feeds cairo a short path).
  plot::ChartSpec spec;
  spec.series.resize(1);
  spec.series[0].label = "noise";
  spec.series[0].x = x;
  spec.series[0].y = y;
  ScopedTempDir dir("plot-long");
  plot::render_chart(spec, dir.file("long.png"));
  EXPECT_GT(std::filesystem::file_size(dir.file("long.png")), 1000u);
}

// Item 4: errors name the file and the line and say what was expected, never a JSON library's
// exception text alone; values that once gave "nice_ticks: bad range [-inf, inf]" (x spanning
// +-1e308) and cairo's "invalid matrix (not invertible)" (y spanning +-1e308) now draw.
TEST(PlotHostile, ErrorsNameTheFileAndLine) {
  ScopedTempDir dir("plot-errors-line");
  const auto overflow = dir.file("overflow/metrics.jsonl");
  write_file(overflow, records({"0.5", "1e999", "0.7"}));
  std::string m = error_of([&] { plot::read_metrics_file(overflow); });
  EXPECT_NE(m.find(overflow + ":2: number overflow parsing '1e999'"), std::string::npos) << m;
  EXPECT_NE(m.find("expected numbers within the range of a double"), std::string::npos) << m;
  EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  // The same on the last line: a complete line with a number out of range is no torn write.
  write_file(overflow, records({"0.5", "1e999"}));
  m = error_of([&] { plot::read_metrics_file(overflow); });
  EXPECT_NE(m.find(overflow + ":2: number overflow"), std::string::npos) << m;

  const auto syntax = dir.file("syntax/metrics.jsonl");
  write_file(syntax, records({"0.5"}) + "\n{\"epoch\":2,\"test_acc\":0.6,}\n" + records({"0.7"}));
  m = error_of([&] { plot::read_metrics_file(syntax); });
  EXPECT_NE(m.find(syntax + ":3: not a JSON line ("), std::string::npos) << m;
  EXPECT_NE(m.find("at column 27): expected one JSON object per line"), std::string::npos) << m;
  EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  EXPECT_EQ(m.find("parse error at line 1"), std::string::npos) << m;  // the file's line, only
  const auto array = dir.file("array/metrics.jsonl");
  write_file(array, "[1, 2]\n" + records({"0.5"}));
  m = error_of([&] { plot::read_metrics_file(array); });
  EXPECT_NE(m.find(array + ":1: a JSON array, not an object: expected one JSON object per line"),
            std::string::npos)
      << m;

  // elapsed_s as the running sum of time_s past the largest double: the record that overflows.
  const auto slow = dir.file("slow/metrics.jsonl");
  write_file(
      slow,
      "{\"epoch\":1,\"time_s\":1e308,\"loss\":1}\n{\"epoch\":2,\"time_s\":1e308,\"loss\":2}\n");
  m = error_of([&] { figure_of({slow}, "loss", "elapsed_s"); });
  EXPECT_NE(m.find(slow + ":2: time_s 1e+308 takes elapsed_s (the running sum of time_s) past"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("expected durations in seconds"), std::string::npos) << m;

  // Values spanning the doubles: drawn, on finite axes, by the command.
  const auto huge_y = dir.file("huge_y/metrics.jsonl"), huge_x = dir.file("huge_x/metrics.jsonl");
  write_file(huge_y, records({"1e308", "-1e308", "1.7976931348623157e308"}));
  write_file(huge_x, "{\"epoch\":1e308,\"test_acc\":1}\n{\"epoch\":-1e308,\"test_acc\":2}\n");
  for (const auto& f : {huge_y, huge_x}) {
    expect_sound_layout(figure_of({f}).spec);
    const auto r = run_dplab(fmt::format("plot {} --out {}", f, dir.file("huge.png")), dir.path);
    EXPECT_EQ(r.status, 0) << r.err;
  }
  // The mean and band of two runs near the largest double stay finite (the plain sum overflowed).
  plot::FigureRequest req;
  req.runs = {huge_y, huge_y};
  req.group_by = "algo";
  req.band = plot::Band::std;
  const auto fig = plot::build_figure(req);
  ASSERT_EQ(fig.spec.series.size(), 1u);
  EXPECT_DOUBLE_EQ(fig.spec.series[0].y[2], kMax);
  for (double v : fig.spec.series[0].lo) EXPECT_TRUE(std::isfinite(v));
  expect_sound_layout(fig.spec);
}

// Item 5: a --y key that one run lacks (test_acc_consensus exists only for some algorithms)
// refused the whole figure with a source location; now the runs that have it are drawn and one
// note names those without. Only a key no run has is an error: a usage error (exit status 2)
// with no source location.
TEST(PlotHostile, KeySomeRunsLackDrawsTheOthers) {
  ScopedTempDir dir("plot-missing-key");
  const auto a = dir.file("a/metrics.jsonl"), b = dir.file("b/metrics.jsonl"),
             c = dir.file("c/metrics.jsonl");
  write_file(a, records({"0.5", "0.6"}, "test_acc_consensus"));
  write_file(b, records({"0.4", "0.5"}));  // test_acc only
  write_file(c, records({"0.7", "0.8"}, "test_acc_consensus"));
  auto fig = figure_of({a, b, c}, "test_acc_consensus");
  ASSERT_EQ(fig.spec.series.size(), 2u);
  EXPECT_EQ(fig.spec.series[0].label, "a");
  EXPECT_EQ(fig.spec.series[1].label, "c");
  EXPECT_EQ(fig.spec.series[1].y, (std::vector<double>{0.7, 0.8}));
  ASSERT_EQ(fig.notes.size(), 1u);
  EXPECT_EQ(fig.notes[0],
            "--y test_acc_consensus: not drawn for 1 of 3 runs, which lack this "
            "numeric key: " +
                dir.file("b"));
  // Grouped: the group counts the runs that have the key.
  plot::FigureRequest req;
  req.runs = {a, b, c};
  req.labels = {"g", "g", "g"};
  req.group_by = "algo";
  req.y_keys = {"test_acc_consensus"};
  fig = plot::build_figure(req);
  ASSERT_EQ(fig.spec.series.size(), 1u);
  EXPECT_EQ(fig.spec.series[0].label, "g (2 runs)");
  EXPECT_NEAR(fig.spec.series[0].y[0], 0.6, 1e-12);

  // The command: the figure with a and c, one line on stderr naming b.
  const auto svg = dir.file("fig.svg");
  auto r = run_dplab(fmt::format("plot {} {} {} --y test_acc_consensus --out {}", a, b, c, svg),
                     dir.path / "1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "note: --y test_acc_consensus: not drawn for 1 of 3 runs, which lack this "
            "numeric key: " +
                dir.file("b") + "\n");
  const std::string text = test::slurp(svg);
  EXPECT_NE(text.find("series: a; series: c</desc>"), std::string::npos) << text.substr(0, 600);

  // No run has the key: a usage error naming the key and the keys there are, no source location.
  r = run_dplab(fmt::format("plot {} {} --y nope --out {}", a, b, dir.file("no.png")),
                dir.path / "2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--y nope: no run has this numeric key in its records of kind 'epoch' "
                       "(their keys: epoch, test_acc, test_acc_consensus, time_s)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("no.png")));
  EXPECT_THROW(figure_of({b}, "loss", "step"), UsageError);  // --x alike
}

// Item 6: a torn last line (a run killed mid-write; two runs writing one file) is skipped with a
// warning naming the file and line; a torn line with records after it is still an error.
TEST(PlotHostile, TornLastLineIsSkippedWithAWarning) {
  ScopedTempDir dir("plot-torn");
  const auto killed = dir.file("killed/metrics.jsonl");
  write_file(killed, records({"0.5", "0.6", "0.7"}) + "{\"kind\":\"epoch\",\"epoch\":4,\"test_ac");
  auto f = plot::read_metrics_file(killed);
  EXPECT_EQ(f.records.size(), 3u);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find(killed + ":4: skipped the last line, not a JSON line ("),
            std::string::npos)
      << f.warnings[0];
  // Two writers: the tail of an overwritten record, newline and blank lines after it.
  const auto shared = dir.file("shared/metrics.jsonl");
  write_file(shared, records({"0.5", "0.6"}) + "_acc\":0.61,\"lr\":0.01}\n\n");
  f = plot::read_metrics_file(shared);
  EXPECT_EQ(f.records.size(), 2u);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find(shared + ":3: skipped the last line"), std::string::npos);
  // In the middle: an error naming the line.
  const auto middle = dir.file("middle/metrics.jsonl");
  write_file(middle, records({"0.5"}) + "{\"kind\":\"epoch\",\"epo\n" + records({"0.6"}));
  EXPECT_NE(
      error_of([&] { plot::read_metrics_file(middle); }).find(middle + ":2: not a JSON line ("),
      std::string::npos);

  // The command draws the three complete records and says which line it skipped.
  auto r = run_dplab(fmt::format("plot {} --out {}", killed, dir.file("k.svg")), dir.path / "1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + killed + ":4: skipped the last line"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_dplab(fmt::format("plot {} --out {}", middle, dir.file("m.svg")), dir.path / "2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(middle + ":2: not a JSON line"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dplab
