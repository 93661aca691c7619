// A 5x7 bitmap font for chart text: digits, capital letters and the punctuation that metric
// names and numbers use. Lower-case letters are drawn with the capital glyphs (the charts are
// read by people, and one case keeps the table short); unknown characters draw as '?'.
#pragma once
#include <array>
#include <cstdint>

namespace dplab::plot {

constexpr int kGlyphW = 5, kGlyphH = 7;
// Horizontal advance per character in font pixels (glyph + one column of space).
constexpr int kGlyphAdvance = kGlyphW + 1;

// Row r (0 = top) of the glyph for `c`: bit 4 is the leftmost column.
using Glyph = std::array<uint8_t, kGlyphH>;
const Glyph& glyph(char c);

}  // namespace dplab::plot
