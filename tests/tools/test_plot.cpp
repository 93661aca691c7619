// dplab plot: the rasterizer, tick choice, metrics reading, and the command end to end (a PNG
// whose curves are where the data says).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "data/temp_dir.h"
#include "dplab/core/error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/font.h"
#include "dplab/tools/plot/metrics_series.h"
#include "run_cli.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace dplab {
namespace {

using plot::Canvas;
using plot::Rgb;
using test::run_dplab;
using test::ScopedTempDir;

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Epoch records y = f(epoch) plus a non-epoch record without the y key (must be skipped).
std::string metrics_text(const std::vector<double>& ys, const std::vector<int>& stages = {}) {
  std::string s = "{\"kind\":\"start\",\"epoch\":0}\n";
  for (size_t i = 0; i < ys.size(); ++i)
    s += fmt::format("{{\"kind\":\"epoch\",\"epoch\":{},\"time_s\":{},\"test_acc\":{}{}}}\n", i + 1,
                     0.5 * double(i + 1), ys[i],
                     stages.empty() ? "" : fmt::format(",\"algo.stage\":{}.0", stages[i]));
  return s;
}

// True when a pixel of colour `c` lies within `r` pixels of (x, y).
bool has_colour_near(const Canvas& img, double x, double y, int r, Rgb c) {
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const int px = int(std::lround(x)) + dx, py = int(std::lround(y)) + dy;
      if (px >= 0 && py >= 0 && px < img.width() && py < img.height() && img.at(px, py) == c)
        return true;
    }
  return false;
}

TEST(Plot, FontGlyphsAreTheDrawnShapes) {
  // '1': a stem in column 2 with a foot across columns 1..3.
  const auto& one = plot::glyph('1');
  EXPECT_EQ(one[0], 0b00100);
  EXPECT_EQ(one[1], 0b01100);
  EXPECT_EQ(one[6], 0b01110);
  EXPECT_EQ(plot::glyph('a'), plot::glyph('A'));  // lower case draws as capitals
  EXPECT_EQ(plot::glyph('~'), plot::glyph('?'));  // unknown characters
  EXPECT_NE(plot::glyph('0'), plot::glyph('8'));
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
  t = plot::nice_ticks(1, 90, 8, &step);
  EXPECT_DOUBLE_EQ(step, 20.0);
  EXPECT_EQ(plot::tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(plot::tick_label(40, 20), "40");
  EXPECT_EQ(plot::tick_label(0.8, 0.02), "0.80");
}

TEST(Plot, ThickLineInksExactlyItsWidth) {
  Canvas c(20, 12);
  const Rgb red{255, 0, 0};
  c.line(2, 5, 10, 5, 3, red);
  for (int x = 2; x <= 10; ++x)
    for (int y = 4; y <= 6; ++y) EXPECT_EQ(c.at(x, y), red) << x << "," << y;
  EXPECT_EQ(c.at(6, 3), (Rgb{255, 255, 255}));
  EXPECT_EQ(c.at(6, 7), (Rgb{255, 255, 255}));
  EXPECT_EQ(c.at(13, 5), (Rgb{255, 255, 255}));
  c.text(12, 0, "1", 1, red);  // '1': row 1 is "01100", row 6 (the foot) is "01110"
  const Rgb white{255, 255, 255};
  EXPECT_EQ(c.at(13, 1), red);
  EXPECT_EQ(c.at(14, 1), red);
  EXPECT_EQ(c.at(12, 1), white);
  EXPECT_EQ(c.at(15, 1), white);
  EXPECT_EQ(c.at(12, 6), white);
  for (int x = 13; x <= 15; ++x) EXPECT_EQ(c.at(x, 6), red) << x;
}

TEST(Plot, CurvesAndMarkersLandWhereTheDataSays) {
  plot::ChartSpec spec;
  spec.width = 400;
  spec.height = 300;
  spec.title = "t";
  spec.x_label = "epoch";
  spec.y_label = "test_acc";
  spec.series.push_back({"up", {1, 2, 3, 4, 5}, {0.5, 0.6, 0.7, 0.8, 0.9}, {{3, "stage=2"}}});
  spec.series.push_back({"down", {1, 2, 3, 4, 5}, {0.9, 0.85, 0.8, 0.75, 0.7}, {}});
  const auto L = plot::layout_chart(spec);
  const Canvas img = plot::render_chart(spec);
  ASSERT_EQ(img.width(), 400);
  ASSERT_EQ(img.height(), 300);
  EXPECT_DOUBLE_EQ(L.x_lo, 1);
  EXPECT_DOUBLE_EQ(L.x_hi, 5);
  EXPECT_LE(L.y_lo, 0.5);
  EXPECT_GE(L.y_hi, 0.9);
  const Rgb c0 = plot::series_color(0), c1 = plot::series_color(1);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_TRUE(has_colour_near(img, L.px(spec.series[0].x[k]), L.py(spec.series[0].y[k]), 1, c0))
        << "series 0 point " << k;
    EXPECT_TRUE(has_colour_near(img, L.px(spec.series[1].x[k]), L.py(spec.series[1].y[k]), 1, c1))
        << "series 1 point " << k;
  }
  // Series 0 does not pass through series 1's end point (0.7 vs 0.9 at epoch 5).
  EXPECT_FALSE(has_colour_near(img, L.px(5), L.py(0.7), 2, c0));
  // The marker at epoch 3: a dashed vertical line in series 0's colour across the plot.
  int inked = 0;
  for (int y = L.top + 20; y < L.bottom - 20; ++y)
    inked += img.at(int(std::lround(L.px(3))), y) == c0;
  EXPECT_GT(inked, (L.bottom - L.top - 40) / 3);
  EXPECT_LT(inked, L.bottom - L.top - 40);  // dashed, not solid
}

TEST(Plot, ReadsSeriesAndStageMarkers) {
  ScopedTempDir dir("plot-read");
  const auto f = dir.file("run/metrics.jsonl");
  write_file(f, metrics_text({0.5, 0.6, 0.7, 0.8}, {1, 1, 2, 2}));
  const auto s = plot::read_metrics_series(f, "epoch", "test_acc", "algo.stage");
  EXPECT_EQ(s.x, (std::vector<double>{1, 2, 3, 4}));  // the start record has no test_acc
  EXPECT_EQ(s.y, (std::vector<double>{0.5, 0.6, 0.7, 0.8}));
  ASSERT_EQ(s.markers.size(), 1u);
  EXPECT_DOUBLE_EQ(s.markers[0].x, 2);  // stage 2 begins when epoch 2 ends
  EXPECT_EQ(s.markers[0].text, "algo.stage=2");
  const auto t = plot::read_metrics_series(f, "time_s", "test_acc");
  EXPECT_EQ(t.x, (std::vector<double>{0.5, 1.0, 1.5, 2.0}));
}

TEST(Plot, ReadErrorsNameTheFileLineAndKey) {
  ScopedTempDir dir("plot-errors");
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m =
      message([&] { plot::read_metrics_series(dir.file("none.jsonl"), "epoch", "loss"); });
  EXPECT_NE(m.find("cannot open metrics file"), std::string::npos) << m;
  EXPECT_NE(m.find("none.jsonl"), std::string::npos) << m;
  const auto bad = dir.file("bad.jsonl");
  write_file(bad, "{\"epoch\":1,\"loss\":2}\n\n{\"epoch\":2,\"loss\":\n");
  m = message([&] { plot::read_metrics_series(bad, "epoch", "loss"); });
  EXPECT_NE(m.find(bad + ":3: not a JSON line"), std::string::npos) << m;
  const auto good = dir.file("good.jsonl");
  write_file(good, metrics_text({0.1, 0.2}));
  m = message([&] { plot::read_metrics_series(good, "epoch", "los"); });
  EXPECT_NE(m.find("no record has the numeric key 'los'"), std::string::npos) << m;
  EXPECT_NE(m.find("test_acc"), std::string::npos) << m;  // lists the keys that exist
  bool found = true;
  EXPECT_TRUE(
      plot::read_metrics_series(good, "epoch", "test_acc", "algo.stage", &found).markers.empty());
  EXPECT_FALSE(found);  // a baseline without stages is fine; the command checks all files
}

TEST(Plot, CommandWritesAPngWithBothCurves) {
  ScopedTempDir dir("plot-cli");
  const auto a = dir.file("runA/metrics.jsonl"), b = dir.file("runB/metrics.jsonl");
  write_file(a, metrics_text({0.5, 0.6, 0.7, 0.8, 0.9}, {1, 1, 1, 2, 2}));
  write_file(b, metrics_text({0.9, 0.8, 0.7, 0.6, 0.5}));
  const auto png = dir.file("fig.png");
  auto r = run_dplab(fmt::format("plot {} {} --x epoch --y test_acc --out {} --title 'Test' "
                                 "--width 500 --height 320 --vline-key algo.stage",
                                 a, b, png),
                     dir.path / "cli");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + png), std::string::npos) << r.out;
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr) << stbi_failure_reason();
  EXPECT_EQ(w, 500);
  EXPECT_EQ(h, 320);
  // Where each series' colour appears: A rises (its right end is higher, i.e. a smaller row),
  // B falls. The legend swatches are excluded by taking the extreme columns of each colour.
  auto extremes = [&](Rgb c) {
    int min_x = w, max_x = -1, y_at_min = 0, y_at_max = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const unsigned char* p = px + (size_t(y) * w + x) * 3;
        if (Rgb{p[0], p[1], p[2]} != c) continue;
        if (x < min_x) min_x = x, y_at_min = y;
        if (x > max_x) max_x = x, y_at_max = y;
      }
    return std::array<int, 4>{min_x, y_at_min, max_x, y_at_max};
  };
  const auto ea = extremes(plot::series_color(0)), eb = extremes(plot::series_color(1));
  stbi_image_free(px);
  ASSERT_GE(ea[2], 0) << "series A's colour is missing";
  ASSERT_GE(eb[2], 0) << "series B's colour is missing";
  EXPECT_GT(ea[2] - ea[0], 250);  // the curves span most of the width
  EXPECT_LT(ea[3], ea[1] - 100);  // A: right end well above the left end
  EXPECT_GT(eb[3], eb[1] + 100);  // B: right end well below
}

TEST(Plot, CommandErrors) {
  ScopedTempDir dir("plot-cli-errors");
  const auto good = dir.file("run/metrics.jsonl"), bad = dir.file("bad/metrics.jsonl");
  write_file(good, metrics_text({0.5, 0.6}));
  write_file(bad, "{\"epoch\":1,\"test_acc\":0.5}\nnot json\n");
  const auto png = dir.file("fig.png");
  auto r =
      run_dplab(fmt::format("plot {} --out {}", dir.file("missing.jsonl"), png), dir.path / "c1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot open metrics file"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} {} --out {}", good, bad, png), dir.path / "c2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(bad + ":2:"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --y nope --out {}", good, png), dir.path / "c3");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no record has the numeric key 'nope'"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --vline-key algo.stage --out {}", good, png), dir.path / "c5");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--vline-key algo.stage: no record of any file"), std::string::npos)
      << r.err;
  r = run_dplab(fmt::format("plot {} --label a --label b --out {}", good, png), dir.path / "c4");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--label given 2 times for 1 files"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(png));
}

}  // namespace
}  // namespace dplab
