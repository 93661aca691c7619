// dplab trace's timeline figure: where the layout puts each step's events (against positions
// worked out from the hand-built trace), and the files cairo writes (SVG whose glyph runs spell
// the labels, PDF, PNG).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <regex>

#include "data/temp_dir.h"
#include "dplab/core/error.h"
#include "dplab/tools/trace/timeline_figure.h"
#include "dplab/tools/trace/trace_file.h"
#include "dplab/tools/trace/trace_summary.h"
#include "dplab/train/config/config.h"  // UsageError
#include "run_cli.h"
#include "trace_fixture.h"

namespace dplab {
namespace {

using nlohmann::json;
using trace::FigRect;
using trace::TimelineLayout;

TimelineLayout layout_of(long a, long b) {
  trace::TimelineSpec spec;
  spec.first_step = a;
  spec.end_step = b;
  return trace::layout_timeline(trace::parse_trace(test::two_rank_trace().dump(), "t.json"), spec);
}

std::vector<FigRect> rects_named(const TimelineLayout& L, const std::string& what, int rank) {
  std::vector<FigRect> r;
  for (const auto& x : L.rects)
    if (x.what == what && x.rank == rank) r.push_back(x);
  return r;
}

bool has_text(const TimelineLayout& L, const std::string& t) {
  for (const auto& x : L.texts)
    if (x.text == t) return true;
  return false;
}

TEST(TraceFigure, StepsAndEventsAreWhereTheTraceSays) {
  // Step 11: rank 0 runs [10000, 20000), rank 1 [12000, 24000): the span is [10000, 24000).
  const TimelineLayout L = layout_of(11, 12);
  EXPECT_DOUBLE_EQ(L.t0_us, 10000);
  EXPECT_DOUBLE_EQ(L.t1_us, 24000);
  const double w = L.plot_x1 - L.plot_x0;
  ASSERT_GT(w, 400);
  // Rank 0's forward of step 11: [10500, 13500) -> 500/14000 and 3000/14000 of the axis. Its
  // step 12 starts inside the span (at 20000) and is drawn too: the figure is a time window.
  const auto fwd0 = rects_named(L, "forward", 0);
  ASSERT_EQ(fwd0.size(), 2u);
  EXPECT_NEAR(fwd0[1].x, L.plot_x0 + w * 10500 / 14000, 1e-9);
  EXPECT_NEAR(fwd0[0].x, L.plot_x0 + w * 500 / 14000, 1e-9);
  EXPECT_NEAR(fwd0[0].w, w * 3000 / 14000, 1e-9);
  // Rank 1's backward [17000, 22000).
  const auto bwd1 = rects_named(L, "backward", 1);
  ASSERT_EQ(bwd1.size(), 1u);
  EXPECT_NEAR(bwd1[0].x, L.plot_x0 + w * 7000 / 14000, 1e-9);
  EXPECT_NEAR(bwd1[0].w, w * 5000 / 14000, 1e-9);
  // Rank 0's two buckets overlap in time: stacked in two rows of the comm lane. Rank 1's do
  // not: one row.
  const auto b00 = rects_named(L, "allreduce bucket 0", 0),
             b01 = rects_named(L, "allreduce bucket 1", 0);
  ASSERT_EQ(b00.size(), 1u);
  ASSERT_EQ(b01.size(), 1u);
  EXPECT_NE(b00[0].y, b01[0].y);
  EXPECT_DOUBLE_EQ(b00[0].y + b00[0].h, b01[0].y);
  const auto b10 = rects_named(L, "allreduce bucket 0", 1),
             b11 = rects_named(L, "allreduce bucket 1", 1);
  EXPECT_DOUBLE_EQ(b10[0].y, b11[0].y);
  // Rank 1's band lies below rank 0's; every event inside its rank's band.
  const auto band0 = rects_named(L, "band", 0), band1 = rects_named(L, "band", 1);
  ASSERT_EQ(band0.size(), 1u);
  ASSERT_EQ(band1.size(), 1u);
  EXPECT_LE(band0[0].y + band0[0].h, band1[0].y);
  double legend_top = 1e9;
  for (const auto& r : L.rects) {
    if (r.what.rfind("legend: ", 0) == 0) legend_top = std::min(legend_top, r.y);
    if (r.rank < 0 || r.what == "band") continue;
    const FigRect& band = r.rank == 0 ? band0[0] : band1[0];
    EXPECT_GE(r.y, band.y) << r.what;
    EXPECT_LE(r.y + r.h, band.y + band.h) << r.what;
    EXPECT_GE(r.x, L.plot_x0 - 1e-9) << r.what;
    EXPECT_LE(r.x + r.w, L.plot_x1 + 1e-9) << r.what;
  }
  // The legend is off the data: below the last band.
  EXPECT_GT(legend_top, band1[0].y + band1[0].h);
  EXPECT_LT(legend_top, L.height);
  for (const char* t :
       {"rank 0", "rank 1", "node 0, hostA", "compute", "comm", "wait", "GPU comm", "step 11",
        "forward", "backward", "optimizer", "time (ms) from the start of step 11", "0", "2"})
    EXPECT_TRUE(has_text(L, t)) << t;
}

// A virtual-time trace (otherData.time_base "virtual:...") says so on the time axis.
TEST(TraceFigure, AVirtualTimeTraceHasAVirtualTimeAxis) {
  json doc = test::two_rank_trace();
  doc["otherData"]["time_base"] = "virtual:testlab";
  trace::TimelineSpec spec;
  spec.first_step = 11;
  spec.end_step = 12;
  const TimelineLayout L = trace::layout_timeline(trace::parse_trace(doc.dump(), "t.json"), spec);
  EXPECT_TRUE(has_text(L, "virtual time (ms) from the start of step 11"));
  EXPECT_FALSE(has_text(L, "time (ms) from the start of step 11"));
}

// Hierarchical buckets' stages (cat comm_stage, tid 2, nested in their bucket) go to the comm
// lane, in a row below the bucket that holds them; the summary does not count them again.
TEST(TraceFigure, BucketStagesSitUnderTheirBucket) {
  json doc = test::two_rank_trace();
  for (auto [name, ts] : {std::pair{"bucket 0 reduce_scatter (node)", 5000.0},
                          std::pair{"bucket 0 allreduce (cross)", 5800.0}})
    doc["traceEvents"].push_back(test::x_event(name, "comm_stage", 0, 2, ts, 800, {{"step", 10}}));
  const auto data = trace::parse_trace(doc.dump(), "t.json");
  EXPECT_DOUBLE_EQ(trace::summarize(data).ranks[0].f.in_flight_us, 4000);
  trace::TimelineSpec spec;
  spec.first_step = 10;
  spec.end_step = 11;
  const TimelineLayout L = trace::layout_timeline(data, spec);
  const FigRect bucket = rects_named(L, "allreduce bucket 0", 0).at(0);
  const FigRect fwd = rects_named(L, "forward", 0).at(0),
                wait = rects_named(L, "wait allreduce", 0).at(0);
  for (const char* stage : {"bucket 0 reduce_scatter (node)", "bucket 0 allreduce (cross)"}) {
    const auto r = rects_named(L, stage, 0);
    ASSERT_EQ(r.size(), 1u) << stage;
    EXPECT_DOUBLE_EQ(r[0].y, bucket.y + bucket.h) << stage;  // the next row of the comm lane
    EXPECT_GT(r[0].y, fwd.y + fwd.h) << stage;
    EXPECT_LT(r[0].y + r[0].h, wait.y) << stage;
  }
  EXPECT_TRUE(has_text(L, "stage of a bucket's allreduce"));
}

// Two loader workers loading at once (tids 3 and 31): a loader lane, one row each.
TEST(TraceFigure, ConcurrentLoaderWorkersGetTheirOwnRows) {
  json doc = test::two_rank_trace();
  doc["traceEvents"].push_back(
      test::x_event("load batch", "data", 1, 3, 1000, 3000, {{"step", 11}}));
  doc["traceEvents"].push_back(
      test::x_event("load batch", "data", 1, 31, 2000, 3000, {{"step", 12}}));
  trace::TimelineSpec spec;
  spec.first_step = 10;
  spec.end_step = 11;
  const TimelineLayout L = trace::layout_timeline(trace::parse_trace(doc.dump(), "t.json"), spec);
  const auto loads = rects_named(L, "load batch", 1);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_DOUBLE_EQ(loads[1].y, loads[0].y + loads[0].h);
  const FigRect wait = rects_named(L, "data_wait", 1).at(0);
  EXPECT_GT(loads[0].y, wait.y + wait.h);  // the loader lane comes after the wait lane
  EXPECT_TRUE(has_text(L, "loader"));
  EXPECT_EQ(rects_named(L, "load batch", 0).size(), 0u);
}

TEST(TraceFigure, DefaultIsTheFirstThreeStepsAndOutOfRangeIsAnError) {
  trace::TimelineSpec spec;
  const auto data = trace::parse_trace(test::two_rank_trace().dump(), "t.json");
  const TimelineLayout L = trace::layout_timeline(data, spec);
  EXPECT_EQ(L.first_step, 10);
  EXPECT_EQ(L.end_step, 13);
  EXPECT_DOUBLE_EQ(L.t1_us, 39000);  // rank 1's step 12 ends at 24000 + 15000
  spec.first_step = 20;
  spec.end_step = 22;
  try {
    trace::layout_timeline(data, spec);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("steps 20:22: the trace holds steps 10 to 12 only"),
              std::string::npos)
        << e.what();
  }
}

// Cairo's SVG writes text as glyph outlines: one <g> per label holding a <use> per glyph. The
// labels are checked as spelled: every glyph stands for one character throughout the file and
// the groups, in drawing order, have the labels' lengths.
TEST(TraceFigure, SvgGlyphRunsSpellTheLabels) {
  test::ScopedTempDir dir("trace-svg");
  const TimelineLayout L = layout_of(10, 13);
  const std::string path = dir.file("t.svg");
  trace::write_figure(L, path);
  const std::string svg = test::slurp(path);
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(fmt::format("viewBox=\"0 0 {:g} {:g}\"", L.width, L.height)),
            std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // The labels as text for search and screen readers (<desc>), as well as drawn.
  const size_t desc = svg.find("<desc>"), desc_end = svg.find("</desc>");
  ASSERT_LT(desc, desc_end);
  for (const char* label : {"rank 0;", "rank 1;", "node 0, hostA;", "step 10;", "backward;"})
    EXPECT_NE(svg.substr(desc, desc_end - desc).find(label), std::string::npos) << label;

  std::vector<std::vector<std::string>> runs;  // glyph ids of each text group
  const std::regex group_re(
      "<g style=\"fill:[^\"]*\">\\s*((?:<use xlink:href=\"#[^\"]+\"[^>]*/>\\s*)+)</g>");
  const std::regex use_re("<use xlink:href=\"#([^\"]+)\"");
  for (std::sregex_iterator g(svg.begin(), svg.end(), group_re), end; g != end; ++g) {
    runs.emplace_back();
    const std::string body = (*g)[1];
    for (std::sregex_iterator u(body.begin(), body.end(), use_re); u != end; ++u)
      runs.back().push_back((*u)[1]);
  }
  ASSERT_EQ(runs.size(), L.texts.size());
  std::map<std::string, char> glyph_char;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string& text = L.texts[i].text;
    ASSERT_EQ(runs[i].size(), text.size()) << text;
    for (size_t c = 0; c < text.size(); ++c) {
      auto [it, fresh] = glyph_char.emplace(runs[i][c], text[c]);
      EXPECT_EQ(it->second, text[c]) << "glyph " << runs[i][c] << " in '" << text << "'";
    }
  }
  // Mixed case is drawn as such: the labels hold 'a' ("rank") and 'A' ("hostA"), which an
  // upper-casing font would draw with one glyph (a conflict above). "rank 0" and "rank 1"
  // differ in the last glyph only.
  int rank0 = -1, rank1 = -1;
  for (size_t i = 0; i < L.texts.size(); ++i) {
    if (L.texts[i].text == "rank 0") rank0 = int(i);
    if (L.texts[i].text == "rank 1") rank1 = int(i);
  }
  ASSERT_GE(rank0, 0);
  ASSERT_GE(rank1, 0);
  EXPECT_TRUE(std::equal(runs[rank0].begin(), runs[rank0].end() - 1, runs[rank1].begin()));
  EXPECT_NE(runs[rank0].back(), runs[rank1].back());
}

TEST(TraceFigure, PdfAndPngAndNothingElse) {
  test::ScopedTempDir dir("trace-pdf");
  const TimelineLayout L = layout_of(10, 12);
  trace::write_figure(L, dir.file("t.pdf"));
  const std::string pdf = test::slurp(dir.file("t.pdf"));
  EXPECT_EQ(pdf.rfind("%PDF-", 0), 0u);
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
  EXPECT_NE(pdf.find("/FontFile"), std::string::npos);  // a real font, embedded
  trace::write_figure(L, dir.file("t.PNG"));
  const std::string png = test::slurp(dir.file("t.PNG"));
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: width and height, big-endian, at 3 pixels per point.
  auto be32 = [&](size_t o) {
    return (unsigned(uint8_t(png[o])) << 24) | (unsigned(uint8_t(png[o + 1])) << 16) |
           (unsigned(uint8_t(png[o + 2])) << 8) | unsigned(uint8_t(png[o + 3]));
  };
  EXPECT_EQ(be32(16), unsigned(L.width * 3 + 0.5));
  EXPECT_EQ(be32(20), unsigned(L.height * 3 + 0.5));
  EXPECT_THROW(trace::write_figure(L, dir.file("t.jpg")), UsageError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.jpg")));
  EXPECT_THROW(trace::write_figure(L, dir.file("no_such_dir/t.svg")), Error);
}

}  // namespace
}  // namespace dplab
