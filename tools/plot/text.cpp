#include "dplab/tools/plot/text.h"

#include <cairo.h>

#include <numbers>

namespace dplab::plot {

void set_font(cairo_t* cr, const Font& f) {
  cairo_select_font_face(cr, "sans-serif",
                         f.italic ? CAIRO_FONT_SLANT_ITALIC : CAIRO_FONT_SLANT_NORMAL,
                         f.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, f.size);
  cairo_font_options_t* o = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(o, CAIRO_HINT_METRICS_OFF);
  cairo_set_font_options(cr, o);
  cairo_font_options_destroy(o);
}

double text_width(cairo_t* cr, const Font& f, const std::string& s) {
  set_font(cr, f);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

double line_height(cairo_t* cr, const Font& f) {
  set_font(cr, f);
  cairo_font_extents_t e;
  cairo_font_extents(cr, &e);
  return e.ascent + e.descent;
}

void draw_text(cairo_t* cr, const Font& f, const std::string& s, double x, double y, HAlign h,
               VAlign v, bool up) {
  set_font(cr, f);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  cairo_text_extents_t te;
  cairo_text_extents(cr, s.c_str(), &te);
  // Offsets in the text's own frame (x along the baseline, y down).
  const double dx = h == HAlign::left ? 0 : h == HAlign::center ? -te.x_advance / 2 : -te.x_advance;
  // The middle of capital letters is about 0.36 of the font size above the baseline; using the
  // font's ascent alone would sit digits visibly low.
  const double dy = v == VAlign::top ? fe.ascent : v == VAlign::middle ? 0.36 * f.size : 0;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (up) cairo_rotate(cr, -std::numbers::pi / 2);
  cairo_move_to(cr, dx, dy);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

}  // namespace dplab::plot
