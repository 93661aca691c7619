// Text on a cairo context in a real font: cairo's toy text API with the family "sans-serif",
// which cairo resolves through fontconfig (DejaVu Sans on Debian). Metrics are unhinted so that
// a layout measured once is the same on the PNG, SVG and PDF surfaces.
#pragma once
#include <string>

typedef struct _cairo cairo_t;

namespace dplab::plot {

struct Font {
  double size = 12;  // pixels on a PNG, points on SVG and PDF
  bool bold = false;
  bool italic = false;
};

// Where (x, y) is on the text's box: horizontally left, centre or right; vertically the top,
// the middle of the font's ascent, or the baseline.
enum class HAlign { left, center, right };
enum class VAlign { top, middle, baseline };

void set_font(cairo_t* cr, const Font& f);
double text_width(cairo_t* cr, const Font& f, const std::string& s);
// The height of a line of text (ascent + descent), the same for every string of a font.
double line_height(cairo_t* cr, const Font& f);
// Draws `s` anchored at (x, y); `up` rotates it to read bottom to top (the anchor then refers
// to the rotated box: HAlign along the text, VAlign across it).
void draw_text(cairo_t* cr, const Font& f, const std::string& s, double x, double y, HAlign h,
               VAlign v, bool up = false);

}  // namespace dplab::plot
