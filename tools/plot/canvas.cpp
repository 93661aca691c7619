#include "dplab/tools/plot/canvas.h"

#include <algorithm>
#include <cmath>

#include "dplab/core/error.h"
#include "dplab/tools/plot/font.h"

namespace dplab::plot {

Canvas::Canvas(int width, int height, Rgb background) : w_(width), h_(height) {
  DPLAB_CHECK(width > 0 && height > 0 && width <= 16384 && height <= 16384,
              "canvas size {}x{}: expected 1..16384 pixels per side", width, height);
  px_.resize(size_t(w_) * size_t(h_) * 3);
  for (size_t i = 0; i < px_.size(); i += 3) {
    px_[i] = background.r;
    px_[i + 1] = background.g;
    px_[i + 2] = background.b;
  }
}

Rgb Canvas::at(int x, int y) const {
  DPLAB_CHECK(x >= 0 && y >= 0 && x < w_ && y < h_, "pixel ({}, {}) outside {}x{}", x, y, w_, h_);
  const size_t i = (size_t(y) * size_t(w_) + size_t(x)) * 3;
  return {px_[i], px_[i + 1], px_[i + 2]};
}

void Canvas::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  const size_t i = (size_t(y) * size_t(w_) + size_t(x)) * 3;
  px_[i] = c.r;
  px_[i + 1] = c.g;
  px_[i + 2] = c.b;
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  if (x0 > x1) std::swap(x0, x1);
  if (y0 > y1) std::swap(y0, y1);
  for (int y = std::max(0, y0); y <= std::min(h_ - 1, y1); ++y)
    for (int x = std::max(0, x0); x <= std::min(w_ - 1, x1); ++x) set(x, y, c);
}

void Canvas::line(double x0, double y0, double x1, double y1, double thickness, Rgb c) {
  // Every pixel centre within thickness/2 of the segment is inked: simple, exact, and fast
  // enough for chart-sized segments (the bounding box is scanned once).
  const double r = std::max(0.5, thickness / 2);
  const int bx0 = int(std::floor(std::min(x0, x1) - r)), bx1 = int(std::ceil(std::max(x0, x1) + r));
  const int by0 = int(std::floor(std::min(y0, y1) - r)), by1 = int(std::ceil(std::max(y0, y1) + r));
  const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int y = std::max(0, by0); y <= std::min(h_ - 1, by1); ++y)
    for (int x = std::max(0, bx0); x <= std::min(w_ - 1, bx1); ++x) {
      double t = len2 > 0 ? ((x - x0) * dx + (y - y0) * dy) / len2 : 0;
      t = std::clamp(t, 0.0, 1.0);
      const double ex = x0 + t * dx - x, ey = y0 + t * dy - y;
      if (ex * ex + ey * ey <= r * r) set(x, y, c);
    }
}

void Canvas::dashed_line(double x0, double y0, double x1, double y1, double thickness, Rgb c,
                         double dash, double gap) {
  const double len = std::hypot(x1 - x0, y1 - y0);
  if (len == 0) return;
  const double ux = (x1 - x0) / len, uy = (y1 - y0) / len;
  for (double s = 0; s < len; s += dash + gap) {
    const double e = std::min(len, s + dash);
    line(x0 + ux * s, y0 + uy * s, x0 + ux * e, y0 + uy * e, thickness, c);
  }
}

void Canvas::text(int x, int y, const std::string& s, int scale, Rgb c) {
  for (size_t k = 0; k < s.size(); ++k) {
    const Glyph& g = glyph(s[k]);
    const int gx = x + int(k) * kGlyphAdvance * scale;
    for (int r = 0; r < kGlyphH; ++r)
      for (int col = 0; col < kGlyphW; ++col)
        if (g[r] & (1 << (kGlyphW - 1 - col)))
          fill_rect(gx + col * scale, y + r * scale, gx + col * scale + scale - 1,
                    y + r * scale + scale - 1, c);
  }
}

void Canvas::text_up(int x, int y, const std::string& s, int scale, Rgb c) {
  // Glyph pixel (col, row) of character k lands at column `row`, and rows counted up from the
  // bottom of the box at (k * advance + col).
  const int len = text_width(s, scale);
  for (size_t k = 0; k < s.size(); ++k) {
    const Glyph& g = glyph(s[k]);
    for (int r = 0; r < kGlyphH; ++r)
      for (int col = 0; col < kGlyphW; ++col)
        if (g[r] & (1 << (kGlyphW - 1 - col))) {
          const int px = x + r * scale;
          const int py = y + len - 1 - (int(k) * kGlyphAdvance + col) * scale;
          fill_rect(px, py - scale + 1, px + scale - 1, py, c);
        }
  }
}

int Canvas::text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : (int(s.size()) * kGlyphAdvance - 1) * scale;
}

int Canvas::text_height(int scale) {
  return kGlyphH * scale;
}

}  // namespace dplab::plot
