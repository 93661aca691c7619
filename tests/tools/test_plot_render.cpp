// dplab plot's drawing: the format follows the extension (and only .png, .svg, .pdf), the files
// are what they claim (PNG signature and size read from the header, %PDF, XML with the texts
// as given), the layout keeps every text off the data, curves land where the data says, and the
// command end to end.
#include <cairo.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/harness.h"
#include "data/temp_dir.h"
#include "dplab/core/error.h"
#include "dplab/tools/plot/chart.h"
#include "dplab/tools/plot/surface.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

using test::error_of;  // tests/common/harness.h

plot::ChartSpec two_series() {
  plot::ChartSpec spec;
  spec.width = 500;
  spec.height = 320;
  spec.title = "Test accuracy, lr=0.01";
  spec.x_label = "epoch";
  spec.y_label = "test_acc";
  plot::Series rising, falling;
  rising.label = "rising";
  rising.x = falling.x = {1, 2, 3, 4, 5};
  rising.y = {0.5, 0.6, 0.7, 0.8, 0.9};
  rising.markers = {{3, "stage=2"}};
  falling.label = "falling";
  falling.y = {0.9, 0.8, 0.65, 0.6, 0.5};
  spec.series = {rising, falling};
  return spec;
}

// Width and height from a PNG's IHDR chunk (big-endian at bytes 16 and 20).
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  auto be32 = [&](size_t o) {
    return uint32_t(uint8_t(bytes[o])) << 24 | uint32_t(uint8_t(bytes[o + 1])) << 16 |
           uint32_t(uint8_t(bytes[o + 2])) << 8 | uint32_t(uint8_t(bytes[o + 3]));
  };
  return {be32(16), be32(20)};
}

TEST(PlotRender, FormatFollowsTheExtension) {
  EXPECT_EQ(plot::format_for_path("a/fig.png"), plot::Format::png);
  EXPECT_EQ(plot::format_for_path("fig.SVG"), plot::Format::svg);
  EXPECT_EQ(plot::format_for_path("fig.pdf"), plot::Format::pdf);
  std::string m = error_of([] { plot::format_for_path("fig.jpg"); });
  EXPECT_NE(m.find("'fig.jpg' from its extension '.jpg': use .png, .svg or .pdf"),
            std::string::npos)
      << m;
  m = error_of([] { plot::format_for_path("fig"); });
  EXPECT_NE(m.find("'(none)'"), std::string::npos) << m;
}

TEST(PlotRender, FilesAreWhatTheirExtensionSays) {
  ScopedTempDir dir("plot-formats");
  const auto spec = two_series();
  plot::render_chart(spec, dir.file("f.png"));
  plot::render_chart(spec, dir.file("f.svg"));
  plot::render_chart(spec, dir.file("f.pdf"));
  const std::string png = slurp(dir.file("f.png")), svg = slurp(dir.file("f.svg")),
                    pdf = slurp(dir.file("f.pdf"));
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png_size(png), (std::pair<uint32_t, uint32_t>{500, 320}));
  EXPECT_EQ(pdf.substr(0, 5), "%PDF-");
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
  EXPECT_EQ(svg.substr(0, 5), "<?xml");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("width=\"500pt\""), std::string::npos);
  // The texts as given, in their case (cairo draws the glyphs; the words are in <title>/<desc>).
  EXPECT_NE(svg.find("<title>Test accuracy, lr=0.01</title>"), std::string::npos);
  EXPECT_NE(svg.find("x: epoch; y: test_acc; series: rising; series: falling"), std::string::npos);
  EXPECT_EQ(svg.find("LR=0.01"), std::string::npos);
}

TEST(PlotRender, LayoutKeepsTextOffTheData) {
  auto spec = two_series();
  spec.series[1].markers = {{3, "stage=2"}, {3.2, "stage=3"}};  // shared and crowded markers
  const auto L = plot::layout_chart(spec);
  const plot::Rect& P = L.plot;
  EXPECT_GT(P.x1 - P.x0, 200);
  EXPECT_GT(P.y1 - P.y0, 150);
  // Legend right of the plot area, inside the figure.
  EXPECT_GE(L.legend.x0, P.x1);
  EXPECT_LE(L.legend.x1, spec.width);
  EXPECT_FALSE(L.legend.overlaps(P));
  // Marker texts above the plot area, apart from each other; the shared one once, uncoloured.
  ASSERT_EQ(L.marker_labels.size(), 2u);
  EXPECT_EQ(L.marker_labels[0].series, -1);
  EXPECT_EQ(L.marker_labels[1].series, 1);
  for (const auto& m : L.marker_labels) EXPECT_LE(m.box.y1, P.y0) << m.text;
  EXPECT_FALSE(L.marker_labels[0].box.overlaps(L.marker_labels[1].box));
  // Every point inside the plot area, y ticks enclosing the data.
  for (const auto& s : spec.series)
    for (size_t k = 0; k < s.x.size(); ++k) {
      EXPECT_GT(L.px(s.x[k]), P.x0);
      EXPECT_LT(L.px(s.x[k]), P.x1);
      EXPECT_GE(L.py(s.y[k]), P.y0);
      EXPECT_LE(L.py(s.y[k]), P.y1);
    }
  EXPECT_LE(L.y_lo, 0.5);
  EXPECT_GE(L.y_hi, 0.9);
  // A long legend name moves the legend below the plot, still off it.
  spec.series[0].label = std::string(80, 'n');
  const auto B = plot::layout_chart(spec);
  EXPECT_TRUE(B.legend_below);
  EXPECT_EQ(B.legend_cols, 1);  // the long name leaves room for one column
  EXPECT_GE(B.legend.y0, B.plot.y1);
  EXPECT_LE(B.legend.y1, spec.height);
  spec.width = 150;
  EXPECT_NE(error_of([&] { plot::layout_chart(spec); }).find("too small"), std::string::npos);
}

// The old bitmap font drew "lr" and "LR" alike; a real font does not.
TEST(PlotRender, TextKeepsItsCase) {
  ScopedTempDir dir("plot-case");
  auto spec = two_series();
  spec.x_label = "lr=0.01";
  plot::render_chart(spec, dir.file("lower.png"));
  spec.x_label = "LR=0.01";
  plot::render_chart(spec, dir.file("upper.png"));
  const std::string lower = slurp(dir.file("lower.png")), upper = slurp(dir.file("upper.png"));
  ASSERT_FALSE(lower.empty());
  EXPECT_NE(lower, upper);
  spec.x_label = "lr=0.01";
  plot::render_chart(spec, dir.file("again.png"));
  EXPECT_EQ(slurp(dir.file("again.png")), lower);  // and the drawing is deterministic
}

TEST(PlotRender, PointsLandWhereTheDataSays) {
  ScopedTempDir dir("plot-pixels");
  const auto spec = two_series();
  const auto L = plot::layout_chart(spec);
  plot::render_chart(spec, dir.file("f.png"));
  cairo_surface_t* img = cairo_image_surface_create_from_png(dir.file("f.png").c_str());
  ASSERT_EQ(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
  const unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  // The pixel's colour (cairo's native-endian xRGB32) is within 2/255 of series i's.
  auto is_series = [&](double x, double y, size_t i) {
    const auto* p = reinterpret_cast<const uint32_t*>(data + int(y) * stride) + int(x);
    const auto c = plot::series_color(i);
    return std::abs(int((*p >> 16) & 255) - int(std::lround(c.r * 255))) <= 2 &&
           std::abs(int((*p >> 8) & 255) - int(std::lround(c.g * 255))) <= 2 &&
           std::abs(int(*p & 255) - int(std::lround(c.b * 255))) <= 2;
  };
  for (size_t i = 0; i < 2; ++i)
    for (size_t k = 0; k < 5; ++k) {
      if (k == 2) continue;  // the curves cross near epoch 3
      const auto& s = spec.series[i];
      EXPECT_TRUE(is_series(L.px(s.x[k]), L.py(s.y[k]), i)) << "series " << i << " point " << k;
      EXPECT_FALSE(is_series(L.px(s.x[k]), L.py(s.y[k]), 1 - i)) << i << " " << k;
    }
  EXPECT_FALSE(is_series(L.px(5), L.py(0.7), 0));  // nowhere near the data
  cairo_surface_destroy(img);
}

std::string metrics_text(const std::vector<double>& ys) {
  std::string s;
  double elapsed = 0;
  for (size_t i = 0; i < ys.size(); ++i)
    s += fmt::format(
        "{{\"kind\":\"epoch\",\"epoch\":{},\"time_s\":1,\"elapsed_s\":{},"
        "\"test_acc\":{},\"lr\":0.01}}\n",
        i + 1, elapsed += 1, ys[i]);
  return s + "{\"kind\":\"final\",\"epoch\":3,\"time_s\":9,\"test_acc\":0.99}\n";
}

TEST(PlotRender, CommandWritesEachFormatAndRefusesOthers) {
  ScopedTempDir dir("plot-cli");
  write_file(dir.file("a/seed0/metrics.jsonl"), metrics_text({0.5, 0.6, 0.7}));
  write_file(dir.file("a/seed1/metrics.jsonl"), metrics_text({0.6, 0.7, 0.8}));
  write_file(dir.file("b/seed0/metrics.jsonl"), metrics_text({0.3, 0.2, 0.4}));
  const std::string runs =
      fmt::format("{} {} {}", dir.file("a/seed0"), dir.file("a/seed1"), dir.file("b/seed0"));
  for (const char* ext : {"png", "svg", "pdf"}) {
    const auto out = dir.file(fmt::format("fig.{}", ext));
    auto r = run_dplab(fmt::format("plot {} --group-by algo --band std --x elapsed_s --y test_acc "
                                   "--y lr --title 'Grouped, lr=0.01' --width 640 --height 400 "
                                   "--out {}",
                                   runs, out),
                       dir.path / ext);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("has no run.json: grouped as"), std::string::npos) << r.err;
  }
  EXPECT_EQ(png_size(slurp(dir.file("fig.png"))), (std::pair<uint32_t, uint32_t>{640, 400}));
  auto r = run_dplab(fmt::format("plot {} --width 300 --height 200 --scale 2.5 --out {}", runs,
                                 dir.file("big.png")),
                     dir.path / "scale");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(png_size(slurp(dir.file("big.png"))), (std::pair<uint32_t, uint32_t>{750, 500}));
  EXPECT_EQ(slurp(dir.file("fig.pdf")).substr(0, 5), "%PDF-");
  const std::string svg = slurp(dir.file("fig.svg"));
  EXPECT_NE(svg.find("series: a: test_acc (2 runs)"), std::string::npos) << svg.substr(0, 600);
  EXPECT_NE(svg.find("band: mean \u00b1 1 std over runs"), std::string::npos);

  // Any other extension is refused before anything is read or written.
  r = run_dplab(fmt::format("plot {} --out {}", runs, dir.file("fig.jpg")), dir.path / "jpg");
  EXPECT_EQ(r.status, 2);  // a usage error, without a source location
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("from its extension '.jpg': use .png, .svg or .pdf"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("fig.jpg")));
}

TEST(PlotRender, CommandErrors) {
  ScopedTempDir dir("plot-cli-errors");
  const auto good = dir.file("run/metrics.jsonl"), bad = dir.file("bad/metrics.jsonl");
  write_file(good, metrics_text({0.5, 0.6}));
  // (a bad line with records after it: a bad last line is skipped as torn, test_plot_hostile.cpp)
  write_file(bad, "{\"epoch\":1,\"test_acc\":0.5}\nnot json\n{\"epoch\":2,\"test_acc\":0.6}\n");
  const auto png = dir.file("fig.png");
  auto r =
      run_dplab(fmt::format("plot {} --out {}", dir.file("missing.jsonl"), png), dir.path / "c1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot open metrics file"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} {} --out {}", good, bad, png), dir.path / "c2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(bad + ":2:"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --y nope --out {}", good, png), dir.path / "c3");
  EXPECT_EQ(r.status, 2);  // a key no run has: a usage error, without a source location
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--y nope: no run has this numeric key in its records of kind 'epoch'"),
            std::string::npos)
      << r.err;
  r = run_dplab(fmt::format("plot {} --vline-key algo.stage --out {}", good, png), dir.path / "c5");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--vline-key algo.stage: no record of any run"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --label a --label b --out {}", good, png), dir.path / "c4");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--label given 2 times for 1 runs"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --band iqr --out {}", good, png), dir.path / "c6");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected minmax, std or none"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("plot {} --kind step --out {}", good, png), dir.path / "c7");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no record of kind 'step' (kinds: epoch, final)"), std::string::npos)
      << r.err;
  r = run_dplab(fmt::format("plot {} --out {}", dir.path.string(), png), dir.path / "c8");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("has no metrics.jsonl"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(png));
}

}  // namespace
}  // namespace dplab
