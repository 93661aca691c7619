// The timeline figure of `dplab trace OUT --out FILE`: a few steps of every rank, one band per
// rank with lanes for compute (forward, backward, optimizer), communication and waits, a time
// axis in ms and a legend below the data. Built in two stages so tests can check where things
// are: layout_timeline() places every shape and label (in points, 1/72 inch), write_figure()
// draws them with cairo to SVG, PDF or PNG.
#pragma once
#include <string>
#include <vector>

#include "dplab/tools/trace/trace_file.h"

namespace dplab::trace {

struct Rgb {
  double r = 0, g = 0, b = 0;
};

struct FigRect {
  double x = 0, y = 0, w = 0, h = 0;
  Rgb fill;
  std::string what;  // the event's name ("forward", "allreduce bucket 2"), or "band"
  int rank = -1;
  bool outline = false;  // a thin white edge, so back-to-back events stay apart
};

struct FigText {
  double x = 0, y = 0;  // anchor; y is the text's vertical centre
  std::string text;
  double size = 8;  // points
  enum Align { kLeft, kCentre, kRight } align = kLeft;
  bool bold = false;
  Rgb colour;
};

struct FigLine {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  double width = 0.5;
  Rgb colour;
  bool dashed = false;
};

struct TimelineLayout {
  double width = 0, height = 0;       // points
  double plot_x0 = 0, plot_x1 = 0;    // the time axis's extent on the page
  double t0_us = 0, t1_us = 0;        // the time span drawn (trace microseconds)
  long first_step = 0, end_step = 0;  // steps first_step <= s < end_step
  std::vector<FigRect> rects;
  std::vector<FigLine> lines;
  std::vector<FigText> texts;
  double x_of(double ts_us) const {
    return plot_x0 + (ts_us - t0_us) / (t1_us - t0_us) * (plot_x1 - plot_x0);
  }
};

struct TimelineSpec {
  long first_step = -1, end_step = -1;  // -1: the first 3 steps the trace holds
  double width = 640;                   // points (about 8.9 inches)
};

// Throws dplab::Error when no step of the range is in the trace.
TimelineLayout layout_timeline(const TraceData& trace, const TimelineSpec& spec);

// Throws dplab::UsageError unless `path` ends in .svg, .pdf or .png (the formats cairo writes).
void check_figure_path(const std::string& path);

// Draws `layout` to `path` (format by extension); throws dplab::Error if cairo cannot write it.
void write_figure(const TimelineLayout& layout, const std::string& path);

// Width of `text` in points in the figure's face ("sans-serif" through fontconfig).
double text_width(const std::string& text, double size, bool bold = false);

}  // namespace dplab::trace
