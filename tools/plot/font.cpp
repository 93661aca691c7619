#include "dplab/tools/plot/font.h"

#include <cctype>
#include <map>

namespace dplab::plot {
namespace {

// Each glyph is written as 7 rows of 5 columns ('#' = ink), so the table reads as the letters.
Glyph parse(const char* rows) {
  Glyph g{};
  for (int r = 0; r < kGlyphH; ++r) {
    uint8_t bits = 0;
    for (int c = 0; c < kGlyphW; ++c) bits = uint8_t((bits << 1) | (rows[r * kGlyphW + c] == '#'));
    g[r] = bits;
  }
  return g;
}

const std::map<char, Glyph>& table() {
  static const std::map<char, Glyph> t = [] {
    std::map<char, Glyph> m;
    auto def = [&](char c, const char* rows) { m[c] = parse(rows); };
    def('0', " ### #   ##  ### # ###  ##   # ### ");
    def('1', "  #   ##    #    #    #    #   ### ");
    def('2', " ### #   #    #   #   #   #   #####");
    def('3', "#####   #   #     #     ##   # ### ");
    def('4', "   #   ##  # # #  # #####   #    # ");
    def('5', "######    ####     #    ##   # ### ");
    def('6', "  ##  #   #    #### #   ##   # ### ");
    def('7', "#####    #   #   #   #    #    #   ");
    def('8', " ### #   ##   # ### #   ##   # ### ");
    def('9', " ### #   ##   # ####    #   #  ##  ");
    def('A', " ### #   ##   #######   ##   ##   #");
    def('B', "#### #   ##   ##### #   ##   ##### ");
    def('C', " ### #   ##    #    #    #   # ### ");
    def('D', "###  #  # #   ##   ##   ##  # ###  ");
    def('E', "######    #    #### #    #    #####");
    def('F', "######    #    #### #    #    #    ");
    def('G', " ### #   ##    # ####   ##   # ####");
    def('H', "#   ##   ##   #######   ##   ##   #");
    def('I', " ###   #    #    #    #    #   ### ");
    def('J', "  ###   #    #    #    # #  #  ##  ");
    def('K', "#   ##  # # #  ##   # #  #  # #   #");
    def('L', "#    #    #    #    #    #    #####");
    def('M', "#   ### ### # ## # ##   ##   ##   #");
    def('N', "#   ##   ###  ## # ##  ###   ##   #");
    def('O', " ### #   ##   ##   ##   ##   # ### ");
    def('P', "#### #   ##   ##### #    #    #    ");
    def('Q', " ### #   ##   ##   ## # ##  #  ## #");
    def('R', "#### #   ##   ##### # #  #  # #   #");
    def('S', " #####    #     ###     #    ##### ");
    def('T', "#####  #    #    #    #    #    #  ");
    def('U', "#   ##   ##   ##   ##   ##   # ### ");
    def('V', "#   ##   ##   ##   ##   # # #   #  ");
    def('W', "#   ##   ##   ## # ## # ## # # # # ");
    def('X', "#   ##   # # #   #   # # #   ##   #");
    def('Y', "#   ##   # # #   #    #    #    #  ");
    def('Z', "#####    #   #   #   #   #    #####");
    def('.', "                         ##   ##   ");
    def('-', "               #####               ");
    def('_', "                              #####");
    def(':', "      ##   ##        ##   ##       ");
    def('/', "    #   #    #   #   #    #   #    ");
    def(',', "                    ##    #   #    ");
    def('(', "   #   #   #    #    #     #     # ");
    def(')', " #     #     #    #    #   #   #   ");
    def('=', "          #####     #####          ");
    def('+', "       #    #  #####  #    #       ");
    def('%', "##   ##  #   #   #   #   #  ##   ##");
    def('?', " ### #   #    #   #   #         #  ");
    def('\'', "  #    #   #                       ");
    def('[', " ###  #    #    #    #    #    ### ");
    def(']', " ###    #    #    #    #    #  ### ");
    def('<', "   #   #   #   #     #     #     # ");
    def('>', " #     #     #     #   #   #   #   ");
    def('*', "     # # # ### ##### ### # # #     ");
    def(' ', "                                   ");
    return m;
  }();
  return t;
}

}  // namespace

const Glyph& glyph(char c) {
  const auto& t = table();
  auto it = t.find(char(std::toupper(static_cast<unsigned char>(c))));
  return it != t.end() ? it->second : t.at('?');
}

}  // namespace dplab::plot
