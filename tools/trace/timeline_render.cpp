// Drawing a TimelineLayout with cairo: its own SVG and PDF surfaces (vector, text as embedded
// font glyphs) and an image surface written as PNG at 3x (216 dpi) so a raster copy is still
// sharp in print. Text goes through cairo's toy API with the fontconfig face "sans-serif"
// (DejaVu Sans on Debian), which is enough for the short labels here and needs no pango.
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <cctype>
#include <filesystem>
#include <memory>

#include "dplab/core/error.h"
#include "dplab/tools/trace/timeline_figure.h"
#include "dplab/tools/train/config.h"

namespace dplab::trace {
namespace {

constexpr double kPngScale = 3;
constexpr const char* kFace = "sans-serif";

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

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

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using Context = std::unique_ptr<cairo_t, ContextDeleter>;

void check_status(cairo_status_t st, const std::string& path) {
  DPLAB_CHECK(st == CAIRO_STATUS_SUCCESS, "cannot write figure {}: {}", path,
              cairo_status_to_string(st));
}

}  // namespace

void check_figure_path(const std::string& path) {
  const std::string ext = extension_of(path);
  if (ext != ".svg" && ext != ".pdf" && ext != ".png")
    throw UsageError(fmt::format("--out {}: unknown figure format '{}'; accepted: .svg, .pdf, .png",
                                 path, ext.empty() ? "(no extension)" : ext));
}

void write_figure(const TimelineLayout& L, const std::string& path) {
  check_figure_path(path);
  const std::string ext = extension_of(path);
  Surface surface;
  if (ext == ".svg") surface.reset(cairo_svg_surface_create(path.c_str(), L.width, L.height));
  if (ext == ".pdf") surface.reset(cairo_pdf_surface_create(path.c_str(), L.width, L.height));
  if (ext == ".png")
    surface.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, int(L.width * kPngScale + 0.5),
                                             int(L.height * kPngScale + 0.5)));
  check_status(cairo_surface_status(surface.get()), path);
  {
    Context cr(cairo_create(surface.get()));
    if (ext == ".png") cairo_scale(cr.get(), kPngScale, kPngScale);
    draw(cr.get(), L);
    check_status(cairo_status(cr.get()), path);
  }
  if (ext == ".png") check_status(cairo_surface_write_to_png(surface.get(), path.c_str()), path);
  cairo_surface_finish(surface.get());  // SVG and PDF are written out here
  check_status(cairo_surface_status(surface.get()), path);
}

double text_width(const std::string& text, double size, bool bold) {
  if (text.empty()) return 0;
  Surface s(cairo_image_surface_create(CAIRO_FORMAT_A8, 1, 1));
  Context cr(cairo_create(s.get()));
  set_font(cr.get(), size, bold);
  cairo_text_extents_t ext;
  cairo_text_extents(cr.get(), text.c_str(), &ext);
  return ext.x_advance;
}

}  // namespace dplab::trace
