// dplab plot without drawing: tick choice, reading records of one kind (the final record never
// mixes into epoch series), elapsed time, grouping arithmetic, run names and run.json options.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/harness.h"
#include "data/temp_dir.h"
#include "dplab/core/error.h"
#include "dplab/tools/plot/figure.h"
#include "dplab/tools/plot/grouping.h"
#include "dplab/tools/plot/metrics_series.h"
#include "dplab/tools/plot/runs.h"
#include "dplab/tools/plot/ticks.h"

namespace dplab {
namespace {

using test::ScopedTempDir;

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

using test::error_of;  // tests/common/harness.h

// A start record, epoch records (time_s = 0.5 * epoch: the epoch's own time), optional stage
// key, and a final record holding the whole run's totals (its time_s is the process time, its
// epoch the last one): the record that made `--x time_s` zig-zag.
std::string metrics_text(const std::vector<double>& ys, const std::vector<int>& stages = {}) {
  std::string s = "{\"kind\":\"start\",\"epoch\":0}\n";
  double total = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    total += 0.5 * double(i + 1);
    s += fmt::format("{{\"kind\":\"epoch\",\"epoch\":{},\"time_s\":{},\"test_acc\":{}{}}}\n", i + 1,
                     0.5 * double(i + 1), ys[i],
                     stages.empty() ? "" : fmt::format(",\"algo.stage\":{}.0", stages[i]));
  }
  s += fmt::format("{{\"kind\":\"final\",\"epoch\":{},\"time_s\":{},\"test_acc\":{}}}\n", ys.size(),
                   total + 3.0, ys.empty() ? 0.0 : ys.back() + 0.01);
  return s;
}

plot::MetricsSeries read(const std::string& path, const std::string& x, const std::string& y,
                         const std::string& kind = "epoch", const std::string& marker = {}) {
  return plot::series_of(plot::read_metrics_file(path), {x, y, kind, marker});
}

TEST(Plot, NiceTicksUseOneTwoFiveSteps) {
  double step = 0;
  auto t = plot::nice_ticks(0.0, 1.0, 5, &step);
  EXPECT_DOUBLE_EQ(step, 0.2);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_DOUBLE_EQ(t.front(), 0.0);
  EXPECT_NEAR(t.back(), 1.0, 1e-12);
  t = plot::nice_ticks(0.83, 0.91, 6, &step);  // accuracies: enclosing ticks, step 0.02
  EXPECT_DOUBLE_EQ(step, 0.02);
  EXPECT_NEAR(t.front(), 0.82, 1e-12);
  EXPECT_NEAR(t.back(), 0.92, 1e-12);
  t = plot::nice_ticks(1, 90, 8, &step);  // raw step 11.1 -> 20
  EXPECT_DOUBLE_EQ(step, 20.0);
  EXPECT_EQ(t, (std::vector<double>{0, 20, 40, 60, 80, 100}));
  t = plot::nice_ticks(-3, 7, 5, &step);  // raw 2 -> 2 exactly, 0 is a tick
  EXPECT_DOUBLE_EQ(step, 2.0);
  EXPECT_EQ(t, (std::vector<double>{-4, -2, 0, 2, 4, 6, 8}));
  t = plot::nice_ticks(0, 2600, 5, &step);  // raw 520 -> 1000
  EXPECT_DOUBLE_EQ(step, 1000.0);
  EXPECT_EQ(t, (std::vector<double>{0, 1000, 2000, 3000}));
  t = plot::nice_ticks(0.85, 6.15, 10, &step, 1.0);  // epochs 1-6: 0.5 steps would fit, 1 wins
  EXPECT_DOUBLE_EQ(step, 1.0);
  EXPECT_EQ(t, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  t = plot::nice_ticks(0, 100, 4, &step, 1.0);  // a minimum below the nice step changes nothing
  EXPECT_DOUBLE_EQ(step, 50.0);
  t = plot::nice_ticks(0, 10, 10, &step, 1.5);  // a minimum that is not nice: the next nice one
  EXPECT_DOUBLE_EQ(step, 2.0);
  EXPECT_EQ(plot::tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(plot::tick_label(40, 20), "40");
  EXPECT_EQ(plot::tick_label(0.8, 0.02), "0.80");
  EXPECT_EQ(plot::tick_label(-1e-17, 0.1), "0.0");  // no "-0.0" from k * step rounding
  EXPECT_EQ(plot::tick_label(2500000, 500000), "2.5e+06");
  EXPECT_NE(error_of([] { plot::nice_ticks(1, 1, 5, nullptr); }).find("bad range"),
            std::string::npos);
}

TEST(Plot, GroupMeanAndBandsByHand) {
  // Three seeds of three points; the x values differ a little (elapsed time).
  std::vector<plot::Series> runs(3);
  runs[0].x = {1, 2, 3};
  runs[0].y = {1, 2, 3};
  runs[0].markers = {{2, "m"}};
  runs[1].x = {1, 2, 3.3};
  runs[1].y = {3, 4, 7};
  runs[2].x = {1, 2, 3.6};
  runs[2].y = {2, 3, 5};
  // Final records of 0.5, 0.9, 0.7 (mean 0.7, sample std 0.2), of 2 runs first.
  runs[0].final_point = plot::Series::Final{3, 0.5, 0.5, 0.5};
  runs[1].final_point = plot::Series::Final{3.3, 0.9, 0.9, 0.9};
  size_t dropped = 99;
  auto g = plot::group_mean(runs, plot::Band::minmax, "g", &dropped);
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(g.label, "g");
  ASSERT_EQ(g.x.size(), 3u);
  EXPECT_DOUBLE_EQ(g.x[2], 3.3);  // (3 + 3.3 + 3.6) / 3
  EXPECT_EQ(g.y, (std::vector<double>{2, 3, 5}));
  EXPECT_EQ(g.lo, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(g.hi, (std::vector<double>{3, 4, 7}));
  ASSERT_EQ(g.markers.size(), 1u);          // the first run's
  EXPECT_FALSE(g.final_point.has_value());  // only when every run has one
  runs[2].final_point = plot::Series::Final{3.6, 0.7, 0.7, 0.7};
  g = plot::group_mean(runs, plot::Band::minmax, "g");
  ASSERT_TRUE(g.final_point.has_value());
  EXPECT_DOUBLE_EQ(g.final_point->x, 3.3);
  EXPECT_NEAR(g.final_point->y, 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(g.final_point->lo, 0.5);
  EXPECT_DOUBLE_EQ(g.final_point->hi, 0.9);
  // Sample standard deviation: point 0 is {1, 3, 2}: mean 2, squares 1 + 1 + 0 over n - 1 = 2
  // -> 1; point 2 is {3, 7, 5}: 4 + 4 + 0 over 2 -> 2.
  g = plot::group_mean(runs, plot::Band::std, "g");
  EXPECT_DOUBLE_EQ(g.lo[0], 1);
  EXPECT_DOUBLE_EQ(g.hi[0], 3);
  EXPECT_DOUBLE_EQ(g.lo[2], 3);
  EXPECT_DOUBLE_EQ(g.hi[2], 7);
  EXPECT_NEAR(g.final_point->lo, 0.5, 1e-12);  // 0.7 -+ 0.2
  EXPECT_NEAR(g.final_point->hi, 0.9, 1e-12);
  g = plot::group_mean({runs[0]}, plot::Band::std, "one");  // one run: no spread
  EXPECT_EQ(g.lo, g.y);
  EXPECT_EQ(g.hi, g.y);
  g = plot::group_mean(runs, plot::Band::none, "g");
  EXPECT_TRUE(g.lo.empty() && g.hi.empty());
  // Different lengths: cut to the shortest, the loss reported.
  runs[1].x.resize(2);
  runs[1].y.resize(2);
  g = plot::group_mean(runs, plot::Band::minmax, "g", &dropped);
  EXPECT_EQ(g.y, (std::vector<double>{2, 3}));
  EXPECT_EQ(dropped, 1u);
  EXPECT_EQ(plot::parse_band("std"), plot::Band::std);
  EXPECT_NE(error_of([] { plot::parse_band("iqr"); }).find("expected minmax, std or none"),
            std::string::npos);
}

TEST(Plot, OnlyRecordsOfOneKindSoTimeNeverJumpsBack) {
  ScopedTempDir dir("plot-kind");
  const auto f = dir.file("run/metrics.jsonl");
  write_file(f, metrics_text({0.5, 0.6, 0.7, 0.8}, {1, 1, 2, 2}));
  auto s = read(f, "epoch", "test_acc", "epoch", "algo.stage").series;
  EXPECT_EQ(s.x, (std::vector<double>{1, 2, 3, 4}));  // neither start nor final
  EXPECT_EQ(s.y, (std::vector<double>{0.5, 0.6, 0.7, 0.8}));
  ASSERT_EQ(s.markers.size(), 1u);
  EXPECT_DOUBLE_EQ(s.markers[0].x, 2);  // stage 2 begins when epoch 2 ends
  EXPECT_EQ(s.markers[0].text, "algo.stage=2");
  EXPECT_NEAR(read(f, "epoch", "test_acc").final_y.value_or(-1), 0.81, 1e-12);  // final's own
  // The file has no elapsed_s: the running sum of the epochs' time_s (0.5, 1, 1.5, 2).
  auto m = read(f, "elapsed_s", "test_acc");
  EXPECT_TRUE(m.elapsed_from_time_s);
  EXPECT_EQ(m.series.x, (std::vector<double>{0.5, 1.5, 3.0, 5.0}));
  for (size_t i = 1; i < m.series.x.size(); ++i) EXPECT_GT(m.series.x[i], m.series.x[i - 1]);
  // With elapsed_s in the records, it is used as written.
  const auto g = dir.file("new/metrics.jsonl");
  write_file(g,
             "{\"kind\":\"epoch\",\"epoch\":1,\"time_s\":2,\"elapsed_s\":2.5,\"loss\":1}\n"
             "{\"kind\":\"step\",\"step\":10,\"loss\":0.7}\n"
             "{\"kind\":\"epoch\",\"epoch\":2,\"time_s\":2,\"elapsed_s\":4.75,\"loss\":0.5}\n"
             "{\"kind\":\"step\",\"step\":20,\"loss\":0.4}\n"
             "{\"kind\":\"final\",\"time_s\":9,\"elapsed_s\":9,\"loss\":0.5}\n");
  m = read(g, "elapsed_s", "loss");
  EXPECT_FALSE(m.elapsed_from_time_s);
  EXPECT_EQ(m.series.x, (std::vector<double>{2.5, 4.75}));
  s = read(g, "step", "loss", "step").series;
  EXPECT_EQ(s.x, (std::vector<double>{10, 20}));
  EXPECT_EQ(s.y, (std::vector<double>{0.7, 0.4}));
  // Records without a kind (older files) count as epoch records.
  const auto h = dir.file("old/metrics.jsonl");
  write_file(h, "{\"epoch\":1,\"loss\":2}\n{\"epoch\":2,\"loss\":1}\n");
  EXPECT_EQ(read(h, "epoch", "loss").series.y, (std::vector<double>{2, 1}));
}

TEST(Plot, ReadErrorsNameTheFileLineKindAndKey) {
  ScopedTempDir dir("plot-errors");
  std::string m = error_of([&] { plot::read_metrics_file(dir.file("none.jsonl")); });
  EXPECT_NE(m.find("cannot open metrics file"), std::string::npos) << m;
  EXPECT_NE(m.find("none.jsonl"), std::string::npos) << m;
  const auto bad = dir.file("bad.jsonl");
  write_file(bad, "{\"epoch\":1,\"loss\":2}\n\n{\"epoch\":2,\"loss\":\n{\"epoch\":3,\"loss\":1}\n");
  m = error_of([&] { plot::read_metrics_file(bad); });
  EXPECT_NE(m.find(bad + ":3: not a JSON line"), std::string::npos) << m;
  const auto good = dir.file("good.jsonl");
  write_file(good, metrics_text({0.1, 0.2}));
  m = error_of([&] { read(good, "epoch", "los"); });
  EXPECT_NE(m.find("no record of kind 'epoch' has the numeric key 'los'"), std::string::npos) << m;
  EXPECT_NE(m.find("test_acc"), std::string::npos) << m;  // lists the keys that exist
  m = error_of([&] { read(good, "step", "loss", "step"); });
  EXPECT_NE(m.find("no record of kind 'step' (kinds: epoch, final, start)"), std::string::npos)
      << m;
  auto r = read(good, "epoch", "test_acc", "epoch", "algo.stage");
  EXPECT_TRUE(r.series.markers.empty());  // a baseline without stages is fine
  EXPECT_FALSE(r.marker_key_found);       // the command checks that some run has the key
}

TEST(Plot, RunNamesAndSeeds) {
  EXPECT_EQ(plot::strip_seed("runs/adam/seed1"), "runs/adam");
  EXPECT_EQ(plot::strip_seed("adam_seed3"), "adam");
  EXPECT_EQ(plot::strip_seed("adam-seed=12"), "adam");
  EXPECT_EQ(plot::strip_seed("seed0"), "seed0");  // nothing would be left
  EXPECT_EQ(plot::strip_seed("adam/seedless"), "adam/seedless");
  EXPECT_EQ(plot::default_labels({"/r/a/seed0", "/r/b/seed0"}),
            (std::vector<std::string>{"a/seed0", "b/seed0"}));
  EXPECT_EQ(plot::default_labels({"/r/a/seed0", "/r/a/seed1"}),
            (std::vector<std::string>{"seed0", "seed1"}));
}

TEST(Plot, RunJsonOptions) {
  ScopedTempDir dir("plot-runjson");
  write_file(dir.file("a/run.json"),
             R"({"options": {"algo": "daso", "optim.lr": 0.01, "epochs": 3.0,
                 "seed": {"value": 7, "default": false}, "data": {"name": "mnist"}}})");
  std::string v;
  ASSERT_TRUE(plot::run_option(dir.file("a"), "algo", &v));
  EXPECT_EQ(v, "daso");
  ASSERT_TRUE(plot::run_option(dir.file("a"), "optim.lr", &v));
  EXPECT_EQ(v, "0.01");
  ASSERT_TRUE(plot::run_option(dir.file("a"), "epochs", &v));
  EXPECT_EQ(v, "3");
  ASSERT_TRUE(plot::run_option(dir.file("a"), "seed", &v));
  EXPECT_EQ(v, "7");
  ASSERT_TRUE(plot::run_option(dir.file("a"), "data.name", &v));
  EXPECT_EQ(v, "mnist");
  EXPECT_FALSE(plot::run_option(dir.file("b"), "algo", &v));  // no run.json
  const std::string m = error_of([&] { plot::run_option(dir.file("a"), "algoo", &v); });
  EXPECT_NE(m.find("run.json: no option 'algoo' (options: algo, data, epochs"), std::string::npos)
      << m;
}

// Seeds of two configurations: a/seed0 and a/seed1 (test_acc 0.5, 0.6 and 0.7, 0.8), b/seed0.
TEST(Plot, FigureGroupsRunsByRunJsonOrByPath) {
  ScopedTempDir dir("plot-group");
  write_file(dir.file("a/seed0/metrics.jsonl"), metrics_text({0.5, 0.6}));
  write_file(dir.file("a/seed1/metrics.jsonl"), metrics_text({0.7, 0.8}));
  write_file(dir.file("b/seed0/metrics.jsonl"), metrics_text({0.1, 0.3}));
  plot::FigureRequest req;
  req.runs = {dir.file("a/seed0"), dir.file("a/seed1"), dir.file("b/seed0/metrics.jsonl")};
  req.group_by = "algo";
  auto fig = plot::build_figure(req);  // no run.json anywhere: by path without the seed
  ASSERT_EQ(fig.spec.series.size(), 2u);
  EXPECT_EQ(fig.spec.series[0].label, "a (2 runs)");
  EXPECT_EQ(fig.spec.series[1].label, "b (1 run)");
  EXPECT_NEAR(fig.spec.series[0].y[0], 0.6, 1e-12);
  EXPECT_NEAR(fig.spec.series[0].y[1], 0.7, 1e-12);
  EXPECT_EQ(fig.spec.series[0].lo, (std::vector<double>{0.5, 0.6}));
  EXPECT_EQ(fig.spec.series[0].hi, (std::vector<double>{0.7, 0.8}));
  EXPECT_EQ(fig.spec.notes, (std::vector<std::string>{"band: min\u2013max over runs"}));
  EXPECT_EQ(fig.notes.size(), 3u);  // each run: "has no run.json: grouped as ..."
  // With run.json, the option's value decides: a/seed1 and b/seed0 share "sgd".
  write_file(dir.file("a/seed0/run.json"), R"({"options": {"algo": "allreduce"}})");
  write_file(dir.file("a/seed1/run.json"), R"({"options": {"algo": "sgd"}})");
  write_file(dir.file("b/seed0/run.json"), R"({"options": {"algo": "sgd"}})");
  fig = plot::build_figure(req);
  ASSERT_EQ(fig.spec.series.size(), 2u);
  EXPECT_EQ(fig.spec.series[0].label, "allreduce (1 run)");
  EXPECT_EQ(fig.spec.series[1].label, "sgd (2 runs)");
  EXPECT_NEAR(fig.spec.series[1].y[0], 0.4, 1e-12);  // (0.7 + 0.1) / 2
  EXPECT_TRUE(fig.notes.empty());
  // --final: the mean of the final records (each epoch record's last value + 0.01) at the last x.
  req.with_final = true;
  fig = plot::build_figure(req);
  ASSERT_TRUE(fig.spec.series[1].final_point.has_value());
  EXPECT_DOUBLE_EQ(fig.spec.series[1].final_point->x, 2);
  EXPECT_NEAR(fig.spec.series[1].final_point->y, (0.81 + 0.31) / 2, 1e-12);
  EXPECT_NEAR(fig.spec.series[1].final_point->lo, 0.31, 1e-12);
  EXPECT_EQ(fig.spec.notes.back(), "hollow circle: mean of the final records");
  EXPECT_EQ(fig.spec.series[1].x.size(), 2u);  // the final record is not a point of the line
  req.with_final = false;
  // Several y keys without groups: a series per run and key.
  req.group_by.clear();
  req.runs.resize(2);
  req.labels = {"x", "y"};
  req.y_keys = {"test_acc", "time_s"};
  req.x_key = "elapsed_s";
  fig = plot::build_figure(req);
  ASSERT_EQ(fig.spec.series.size(), 4u);
  EXPECT_EQ(fig.spec.series[1].label, "x: time_s");
  EXPECT_EQ(fig.spec.x_label, "elapsed_s (running sum of epoch time_s)");
  // The final record (time_s = the whole run + 3 s) is not a point: time only goes forward.
  EXPECT_EQ(fig.spec.series[0].x, (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(fig.spec.y_label, "test_acc, time_s");
}

// A metrics file named without a directory (`dplab plot metrics.jsonl` inside the run's
// directory) is read from the current directory and its run named after that directory.
TEST(Plot, BareFileNameIsARunInTheCurrentDirectory) {
  ScopedTempDir dir("plot-bare");
  write_file(dir.file("myrun/metrics.jsonl"), metrics_text({0.25, 0.75}));
  struct Cwd {  // restores the working directory however the test ends
    std::filesystem::path before = std::filesystem::current_path();
    ~Cwd() { std::filesystem::current_path(before); }
  } cwd;
  std::filesystem::current_path(dir.file("myrun"));
  plot::FigureRequest req;
  req.runs = {"metrics.jsonl"};
  const auto fig = plot::build_figure(req);
  ASSERT_EQ(fig.spec.series.size(), 1u);
  EXPECT_EQ(fig.spec.series[0].label, "myrun");
  EXPECT_EQ(fig.spec.series[0].y, (std::vector<double>{0.25, 0.75}));
}

}  // namespace
}  // namespace dplab
