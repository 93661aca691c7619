// Canvas: an RGB8 raster with the few drawing primitives charts need (rectangles, thick and
// dashed lines, bitmap text), and a PNG writer. Drawing is not anti-aliased on purpose: every
// ink pixel has exactly the colour asked for, which keeps charts crisp at small sizes and lets
// tests find a series by its colour.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab::plot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background = {255, 255, 255});
  int width() const { return w_; }
  int height() const { return h_; }
  Rgb at(int x, int y) const;
  // Pixels outside the canvas are ignored by every drawing call.
  void set(int x, int y, Rgb c);
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);  // inclusive corners
  // A line of `thickness` pixels between two points in pixel coordinates (round caps).
  void line(double x0, double y0, double x1, double y1, double thickness, Rgb c);
  // Dashed line: `dash` pixels drawn, `gap` pixels skipped.
  void dashed_line(double x0, double y0, double x1, double y1, double thickness, Rgb c,
                   double dash = 6, double gap = 4);
  // Text with its top-left corner at (x, y); `scale` magnifies the 5x7 font.
  void text(int x, int y, const std::string& s, int scale, Rgb c);
  // Text rotated 90 degrees counter-clockwise (reads bottom to top), its bounding box's
  // top-left corner at (x, y).
  void text_up(int x, int y, const std::string& s, int scale, Rgb c);
  static int text_width(const std::string& s, int scale);
  static int text_height(int scale);
  const std::vector<uint8_t>& rgb() const { return px_; }

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

// Writes `c` as an 8-bit RGB PNG; throws dplab::Error naming the path when it cannot.
void write_png(const Canvas& c, const std::string& path);

}  // namespace dplab::plot
