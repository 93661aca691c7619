// Placing the timeline figure's shapes and labels (drawing is timeline_render.cpp). Sizes are
// in points for a figure about 9 inches wide, so that it goes into a paper at 1:1 with 7-9 pt
// text. Colours are the Okabe-Ito palette: distinguishable with the common colour-vision
// deficiencies and in greyscale print by lightness.
#include "dplab/tools/trace/timeline_figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "dplab/core/error.h"

namespace dplab::trace {
namespace {

constexpr Rgb hex(unsigned v) {
  return {((v >> 16) & 0xff) / 255.0, ((v >> 8) & 0xff) / 255.0, (v & 0xff) / 255.0};
}
constexpr Rgb kForward = hex(0x0072B2), kBackward = hex(0x56B4E9), kOptimizer = hex(0x009E73),
              kOtherCompute = hex(0xF0E442), kDataWait = hex(0xBBBBBB), kComm = hex(0xCC79A7),
              kCommStage = hex(0xE7BFD6), kWait = hex(0xD55E00), kLoader = hex(0x999999),
              kText = hex(0x222222), kGrid = hex(0x888888), kBand = hex(0xF2F2F2);

constexpr double kMargin = 8, kLaneH = 10, kSubRowH = 6, kLaneGap = 2, kBandPad = 3, kBandGap = 7,
                 kStepRow = 11;
constexpr double kRankSize = 8.5, kSmallSize = 7, kLaneSize = 7, kTickSize = 7, kAxisSize = 8,
                 kLegendSize = 7.5;

enum Lane { kComputeLane, kCommLane, kWaitLane, kLoaderLane, kGpuCompute, kGpuComm, kLaneCount };
const char* const kLaneNames[kLaneCount] = {"compute", "comm",        "wait",
                                            "loader",  "GPU compute", "GPU comm"};

Lane lane_of(const Event& e) {
  if (e.tid == kTidGpuCompute) return kGpuCompute;
  if (e.tid == kTidGpuComm) return kGpuComm;
  // tid 2 also holds the stages of hierarchical buckets (cat comm_stage), nested in them.
  if (e.cat == "comm" || e.tid == kTidComm) return kCommLane;
  if (on_loader_track(e)) return kLoaderLane;
  if (e.cat == "wait" || e.name == "data_wait") return kWaitLane;
  return kComputeLane;
}

// What a shape stands for: its colour and legend entry.
enum Kind {
  kFwd,
  kBwd,
  kOpt,
  kOther,
  kData,
  kCommKind,
  kStageKind,
  kWaitKind,
  kLoaderKind,
  kKindCount
};
const Rgb kKindColour[kKindCount] = {kForward, kBackward,  kOptimizer, kOtherCompute, kDataWait,
                                     kComm,    kCommStage, kWait,      kLoader};
const char* const kKindName[kKindCount] = {"forward",
                                           "backward",
                                           "optimizer",
                                           "eval, checkpoint, other",
                                           "data wait",
                                           "communication (launch to completion)",
                                           "stage of a bucket's allreduce",
                                           "wait for communication",
                                           "loader"};

Kind kind_of(const Event& e) {
  if (e.name == "forward") return kFwd;
  if (e.name == "backward") return kBwd;
  if (e.name == "optimizer") return kOpt;
  if (e.name == "data_wait") return kData;
  if (e.cat == "comm") return kCommKind;
  if (e.tid == kTidComm) return kStageKind;
  if (e.cat == "wait") return kWaitKind;
  if (on_loader_track(e)) return kLoaderKind;
  return kOther;
}

// 1, 2 or 5 times a power of ten: the one whose tick count over `span` is nearest `target`.
double nice_step(double span, int target) {
  const double p = std::pow(10.0, std::floor(std::log10(span / target)));
  double best = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (std::abs(span / (m * p) - target) < std::abs(span / best - target)) best = m * p;
  return best;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, decimals);
}

// Greedy interval partitioning: the first sub-row whose last event has ended. Overlapping
// communication (several buckets in flight) stays visible as stacked rows.
std::vector<int> sub_rows(const std::vector<const Event*>& evs, int* rows) {
  std::vector<double> row_end;
  std::vector<int> r(evs.size());
  for (size_t i = 0; i < evs.size(); ++i) {
    size_t k = 0;
    while (k < row_end.size() && row_end[k] > evs[i]->ts) ++k;
    if (k == row_end.size()) row_end.push_back(0);
    row_end[k] = evs[i]->end();
    r[i] = int(k);
  }
  *rows = std::max<int>(1, int(row_end.size()));
  return r;
}

}  // namespace

TimelineLayout layout_timeline(const TraceData& trace, const TimelineSpec& spec) {
  TimelineLayout L;
  L.width = spec.width;
  std::set<long> steps;
  for (const Event& e : trace.events)
    if (e.cat == "step" && e.name == "step") steps.insert(e.step);
  DPLAB_CHECK(!steps.empty(), "{}: no step event in the trace: nothing to draw",
              trace.files.empty() ? "trace" : trace.files.front());
  if (spec.first_step < 0) {
    L.first_step = *steps.begin();
    L.end_step = *std::next(steps.begin(), std::min<long>(2, long(steps.size()) - 1)) + 1;
  } else {
    L.first_step = spec.first_step;
    L.end_step = spec.end_step;
  }
  const auto in_range = [&](long s) { return s >= L.first_step && s < L.end_step; };
  DPLAB_CHECK(std::any_of(steps.begin(), steps.end(), in_range),
              "steps {}:{}: the trace holds steps {} to {} only", L.first_step, L.end_step,
              *steps.begin(), *steps.rbegin());

  // The span: from the earliest rank's start of the first step to the last end of anything
  // belonging to the chosen steps (communication may complete after its step).
  L.t0_us = INFINITY;
  L.t1_us = -INFINITY;
  std::set<int> ranks;
  std::vector<bool> lane_used(kLaneCount, false);
  lane_used[kComputeLane] = lane_used[kCommLane] = lane_used[kWaitLane] = true;
  for (const Event& e : trace.events)
    if (e.cat == "step" && e.name == "step" && in_range(e.step)) {
      L.t0_us = std::min(L.t0_us, e.ts);
      ranks.insert(e.pid);
    }
  for (const Event& e : trace.events)
    if (ranks.count(e.pid) && in_range(e.step) && e.ts >= L.t0_us)
      L.t1_us = std::max(L.t1_us, e.end());
  for (const Event& e : trace.events)
    if (ranks.count(e.pid) && e.tid != kTidSteps && e.end() > L.t0_us && e.ts < L.t1_us)
      lane_used[lane_of(e)] = true;

  // Left column: rank names, then lane names right-aligned against the plot.
  static const std::regex name_re("(rank [0-9]+) \\((.*)\\)");
  std::map<int, std::pair<std::string, std::string>> labels;  // rank -> (title, detail)
  double rank_w = 0, lane_w = 0;
  for (int r : ranks) {
    auto it = trace.process_names.find(r);
    std::string title = fmt::format("rank {}", r), detail;
    std::smatch m;
    if (it != trace.process_names.end() && std::regex_match(it->second, m, name_re)) {
      title = m[1];
      detail = m[2];
    }
    rank_w = std::max({rank_w, text_width(title, kRankSize, true), text_width(detail, kSmallSize)});
    labels[r] = {title, detail};
  }
  for (int l = 0; l < kLaneCount; ++l)
    if (lane_used[l]) lane_w = std::max(lane_w, text_width(kLaneNames[l], kLaneSize));
  L.plot_x0 = kMargin + rank_w + 8 + lane_w + 4;
  L.plot_x1 = L.width - kMargin - 8;  // room for the last tick label's right half

  std::set<Kind> kinds_used;
  double y = kMargin + kStepRow;
  bool first_band = true;
  for (int r : ranks) {
    // This rank's drawable events per lane, in time order.
    std::vector<std::vector<const Event*>> lane_events(kLaneCount);
    for (const Event& e : trace.events)
      if (e.pid == r && e.tid != kTidSteps && e.end() > L.t0_us && e.ts < L.t1_us)
        lane_events[lane_of(e)].push_back(&e);
    for (auto& v : lane_events)
      std::sort(v.begin(), v.end(), [](auto* a, auto* b) {  // enclosing (longer) first on ties
        return a->ts < b->ts || (a->ts == b->ts && a->end() > b->end());
      });

    const double band_top = y;
    L.rects.push_back({0, band_top, 0, 0, kBand, "band", r, false});  // sized below
    const size_t band_index = L.rects.size() - 1;
    y += kBandPad;
    for (int l = 0; l < kLaneCount; ++l) {
      if (!lane_used[l]) continue;
      int rows = 1;
      const std::vector<int> row = sub_rows(lane_events[l], &rows);
      const double lane_h = rows == 1 ? kLaneH : rows * kSubRowH, row_h = lane_h / rows;
      L.texts.push_back(
          {L.plot_x0 - 4, y + lane_h / 2, kLaneNames[l], kLaneSize, FigText::kRight, false, kText});
      for (size_t i = 0; i < lane_events[l].size(); ++i) {
        const Event& e = *lane_events[l][i];
        const double xa = L.x_of(std::max(e.ts, L.t0_us)), xb = L.x_of(std::min(e.end(), L.t1_us));
        kinds_used.insert(kind_of(e));
        L.rects.push_back({xa, y + row[i] * row_h, std::max(xb - xa, 0.3), row_h,
                           kKindColour[kind_of(e)], e.name, r, l == kCommLane || l == kGpuComm});
      }
      y += lane_h + kLaneGap;
    }
    y += kBandPad - kLaneGap;
    FigRect& band = L.rects[band_index];
    band.x = L.plot_x0 - 2;
    band.w = L.plot_x1 - L.plot_x0 + 4;
    band.h = y - band_top;

    const auto& [title, detail] = labels[r];
    const double mid = band_top + band.h / 2;
    L.texts.push_back(
        {kMargin, detail.empty() ? mid : mid - 4.5, title, kRankSize, FigText::kLeft, true, kText});
    if (!detail.empty())
      L.texts.push_back({kMargin, mid + 5, detail, kSmallSize, FigText::kLeft, false, kGrid});

    // Step boundaries of this rank (dashed), step numbers above the first band.
    for (const Event& e : trace.events)
      if (e.pid == r && e.cat == "step" && e.name == "step" && in_range(e.step)) {
        for (double t : {e.ts, e.end()})
          if (t <= L.t1_us)
            L.lines.push_back({L.x_of(t), band_top, L.x_of(t), y, 0.5, kGrid, true});
        if (first_band)
          L.texts.push_back({L.x_of(e.ts) + 2, band_top - kStepRow / 2,
                             fmt::format("step {}", e.step), kTickSize, FigText::kLeft, false,
                             kText});
      }
    first_band = false;
    y += kBandGap;
  }

  // Time axis in ms from the first step's start on the earliest rank.
  y = y - kBandGap + 4;
  L.lines.push_back({L.plot_x0, y, L.plot_x1, y, 0.6, kText, false});
  const double span_ms = (L.t1_us - L.t0_us) / 1000.0, step = nice_step(span_ms, 8);
  for (int i = 0; i * step <= span_ms * (1 + 1e-9); ++i) {
    const double x = L.x_of(L.t0_us + i * step * 1000.0);
    L.lines.push_back({x, y, x, y + 3, 0.6, kText, false});
    L.texts.push_back(
        {x, y + 8, tick_label(i * step, step), kTickSize, FigText::kCentre, false, kText});
  }
  y += 20;
  L.texts.push_back({(L.plot_x0 + L.plot_x1) / 2, y,
                     fmt::format("{} (ms) from the start of step {}",
                                 trace.virtual_time() ? "virtual time" : "time", L.first_step),
                     kAxisSize, FigText::kCentre, false, kText});
  y += 12;

  // Legend below the axis, wrapping, only for what the figure shows.
  // Forward, backward, optimizer and communication always: a reader looks for them.
  kinds_used.insert({kFwd, kBwd, kOpt, kCommKind});
  std::vector<std::pair<std::string, Rgb>> legend;
  for (Kind k : kinds_used) legend.push_back({kKindName[k], kKindColour[k]});
  double x = L.plot_x0;
  for (const auto& [name, colour] : legend) {
    const double w = 9 + 3 + text_width(name, kLegendSize);
    if (x + w > L.plot_x1 && x > L.plot_x0) {
      x = L.plot_x0;
      y += 11;
    }
    L.rects.push_back({x, y - 3.5, 9, 7, colour, "legend: " + name, -1, false});
    L.texts.push_back({x + 12, y, name, kLegendSize, FigText::kLeft, false, kText});
    x += w + 12;
  }
  L.height = std::ceil(y + 6 + kMargin);  // whole points: the surface's size is an integer
  return L;
}

}  // namespace dplab::trace
