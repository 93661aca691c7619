// Drawing a TimelineLayout with cairo, on `dplab plot`'s surface (tools/plot/surface.h): SVG and
// PDF are vector files with the font embedded (the SVG's <desc> lists the labels), PNG is drawn
// at 3 pixels per point (216 dpi) so a raster copy is still sharp in print. Text goes through
// cairo's toy API with the fontconfig face "sans-serif" (DejaVu Sans on Debian), which is enough
// for the short labels here and needs no pango.
#include <cairo.h>
#include <fmt/format.h>

#include <cmath>

#include "dplab/core/error.h"
#include "dplab/tools/plot/surface.h"
#include "dplab/tools/trace/timeline_figure.h"
#include "dplab/train/config/config.h"

namespace dplab::trace {
namespace {

constexpr double kPngScale = 3;
constexpr const char* kFace = "sans-serif";

void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, kFace, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

void draw(cairo_t* cr, const TimelineLayout& L) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (const FigRect& r : L.rects) {
    cairo_rectangle(cr, r.x, r.y, r.w, r.h);
    cairo_set_source_rgb(cr, r.fill.r, r.fill.g, r.fill.b);
    if (!r.outline) {
      cairo_fill(cr);
      continue;
    }
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_set_line_width(cr, 0.4);
    cairo_stroke(cr);
  }
  for (const FigLine& l : L.lines) {
    cairo_move_to(cr, l.x0, l.y0);
    cairo_line_to(cr, l.x1, l.y1);
    cairo_set_source_rgb(cr, l.colour.r, l.colour.g, l.colour.b);
    cairo_set_line_width(cr, l.width);
    const double dash[] = {1.5, 1.5};
    cairo_set_dash(cr, dash, l.dashed ? 2 : 0, 0);
    cairo_stroke(cr);
  }
  cairo_set_dash(cr, nullptr, 0, 0);
  for (const FigText& t : L.texts) {
    set_font(cr, t.size, t.bold);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, t.text.c_str(), &ext);
    double x = t.x;
    if (t.align == FigText::kCentre) x -= ext.x_advance / 2;
    if (t.align == FigText::kRight) x -= ext.x_advance;
    // Vertically centre on the font's cap height (a digit's extents), so labels of mixed
    // content ("rank 0", "step 20") share one baseline.
    cairo_text_extents_t cap;
    cairo_text_extents(cr, "0", &cap);
    cairo_move_to(cr, x, t.y - cap.y_bearing / 2);
    cairo_set_source_rgb(cr, t.colour.r, t.colour.g, t.colour.b);
    cairo_show_text(cr, t.text.c_str());
  }
}

// Every label, for the SVG's <desc> (cairo draws SVG text as glyph outlines): the figure's words
// stay searchable and readable by screen readers.
std::string description(const TimelineLayout& L) {
  std::string d = fmt::format("Timeline of steps {} to {}:", L.first_step, L.end_step - 1);
  for (const FigText& t : L.texts) d += " " + t.text + ";";
  return d;
}

}  // namespace

void check_figure_path(const std::string& path) {
  try {
    plot::format_for_path(path);
  } catch (const Error& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));  // a wrong argument: exit status 2
  }
}

void write_figure(const TimelineLayout& L, const std::string& path) {
  check_figure_path(path);
  // dplab plot's surface: the format by extension, nothing written unless drawing succeeded.
  plot::Surface surface(path, int(std::ceil(L.width)), int(std::ceil(L.height)), kPngScale);
  draw(surface.cr(), L);
  surface.finish(fmt::format("dplab trace: steps {} to {}", L.first_step, L.end_step - 1),
                 description(L));
}

double text_width(const std::string& text, double size, bool bold) {
  if (text.empty()) return 0;
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_A8, 1, 1);
  cairo_t* cr = cairo_create(s);
  set_font(cr, size, bold);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return ext.x_advance;
}

}  // namespace dplab::trace
