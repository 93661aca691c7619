#include "dplab/train/config/toml_nesting.h"

#include <algorithm>

namespace dplab {
namespace {

struct Stop {};

class Scanner {
 public:
  Scanner(std::string_view t, int max_depth) : t_(t), max_(max_depth) {}

  TomlNesting run() {
    try {
      ascii_outside_strings();
      p_ = 0;
      document();
    } catch (const Stop&) {
    }
    return r_;
  }

 private:
  bool eof() const { return p_ >= t_.size(); }
  char cur() const { return t_[p_]; }
  bool at(std::string_view s) const { return t_.substr(std::min(p_, t_.size()), s.size()) == s; }

  // 1-based line and column of the current position.
  void position(size_t& line, size_t& column) const {
    line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < p_ && i < t_.size(); ++i)
      if (t_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    column = p_ - line_start + 1;
  }

  [[noreturn]] void malformed(const char* expected) {
    r_.malformed = true;
    r_.expected = expected;
    r_.bad_offset = p_;
    position(r_.bad_line, r_.bad_column);
    throw Stop{};
  }

  void reached(int depth) {
    if (depth <= r_.depth) return;
    r_.depth = depth;
    position(r_.line, r_.column);
    if (depth > max_) {
      r_.exceeded = true;
      throw Stop{};
    }
  }

  void skip_blanks() {
    while (!eof() && (cur() == ' ' || cur() == '\t')) ++p_;
  }
  void skip_to_eol() {
    while (!eof() && cur() != '\n') ++p_;
  }
  // Blanks, newlines and comments (inside arrays, and between top-level lines).
  void skip_space() {
    while (!eof()) {
      const char c = cur();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
        ++p_;
      else if (c == '#')
        skip_to_eol();
      else
        break;
    }
  }

  // At a quote: a basic ("...", escapes), literal ('...') or multi-line ("""...""", '''...''')
  // string. An unterminated single-line string ends at the newline (where toml++ stops).
  void skip_string() {
    const char q = cur();
    const bool escapes = q == '"';
    const std::string_view triple = q == '"' ? "\"\"\"" : "'''";
    if (at(triple)) {
      p_ += 3;
      while (!eof()) {
        if (escapes && cur() == '\\') {
          p_ += 2;
        } else if (at(triple)) {
          p_ += 3;
          // Up to two quotes just before the closing delimiter belong to the string.
          for (int extra = 0; extra < 2 && !eof() && cur() == q; ++extra) ++p_;
          return;
        } else {
          ++p_;
        }
      }
      return;
    }
    ++p_;
    while (!eof()) {
      const char c = cur();
      if (escapes && c == '\\') {
        p_ += 2;
      } else if (c == q) {
        ++p_;
        return;
      } else if (c == '\n') {
        return;
      } else {
        ++p_;
      }
    }
  }

  // toml++ 3.3 classifies a non-ASCII character outside strings and comments (and right after a
  // line-ending backslash in a """string""") with a function that reaches __builtin_unreachable
  // for most of U+00A1..U+0499 ("é = 1" is undefined behaviour in release builds). TOML 1.0 has
  // no non-ASCII syntax outside strings and comments, so such a byte is refused here first.
  void ascii_outside_strings() {
    const auto ascii = [&] {
      if (!eof() && static_cast<unsigned char>(cur()) >= 0x80)
        malformed("ASCII (TOML allows other characters only in strings and comments)");
    };
    const auto ws = [&] {
      return !eof() && (cur() == ' ' || cur() == '\t' || cur() == '\r' || cur() == '\n');
    };
    while (!eof()) {
      const char c = cur();
      if (c == '#') {
        skip_to_eol();
      } else if (at("\"\"\"")) {
        p_ += 3;
        while (!eof() && !at("\"\"\"")) {
          if (cur() != '\\') {
            ++p_;
            continue;
          }
          ++p_;
          if (ws()) {  // a line-ending backslash: toml++ skips the whitespace that follows
            while (ws()) ++p_;
            ascii();
          } else if (!eof()) {
            ++p_;  // the escaped character
          }
        }
        p_ += 3;
        while (!eof() && cur() == '"') ++p_;
      } else if (c == '"' || c == '\'') {
        skip_string();
      } else {
        ascii();
        ++p_;
      }
    }
  }

  static bool bare_key_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  }

  // A (dotted) key: the number of its parts, at least 1.
  int key() {
    int n = 0;
    while (!eof()) {
      skip_blanks();
      if (eof()) break;
      if (cur() == '"' || cur() == '\'') {
        skip_string();
      } else if (bare_key_char(cur())) {
        while (!eof() && bare_key_char(cur())) ++p_;
      } else {
        break;
      }
      ++n;
      skip_blanks();
      if (eof() || cur() != '.') break;
      ++p_;
    }
    return std::max(n, 1);
  }

  // The value of a key at `depth`: arrays put their elements one deeper, inline tables their
  // keys as many deeper as the key has parts.
  void value(int depth) {
    skip_blanks();
    if (eof()) return;
    const char c = cur();
    if (c == '"' || c == '\'') {
      skip_string();
    } else if (c == '[') {
      ++p_;
      while (true) {
        skip_space();
        if (eof()) return;
        if (cur() == ']') {
          ++p_;
          return;
        }
        if (cur() == '}') malformed("an array element or ']'");
        reached(depth + 1);
        value(depth + 1);
        skip_space();
        if (eof()) return;
        if (cur() == ',') {
          ++p_;
          continue;
        }
        if (cur() == ']') ++p_;
        return;  // ']' or malformed (toml++ stops there)
      }
    } else if (c == '{') {
      ++p_;
      while (true) {
        skip_space();
        if (eof()) return;
        if (cur() == '}') {
          ++p_;
          return;
        }
        const size_t before = p_;
        const int d = depth + key();
        reached(d);
        skip_blanks();
        if (p_ == before || eof() || cur() != '=') return;
        ++p_;
        value(d);
        skip_space();
        if (eof()) return;
        if (cur() == ',') {
          ++p_;
          continue;
        }
        if (cur() == '}') ++p_;
        return;
      }
    } else {
      // Number, date, boolean: up to a separator.
      while (!eof() && cur() != ',' && cur() != ']' && cur() != '}' && cur() != '#' &&
             cur() != '\n')
        ++p_;
    }
  }

  void document() {
    int base = 0;  // depth of the current [table]
    while (true) {
      skip_space();
      if (eof()) return;
      const size_t before = p_;
      if (cur() == '[') {
        ++p_;
        const bool array_of_tables = !eof() && cur() == '[';
        if (array_of_tables) ++p_;
        skip_blanks();
        if (eof() || !(bare_key_char(cur()) || cur() == '"' || cur() == '\'' || cur() == ']'))
          malformed("a key (letter, digit, '_', '-' or a quoted string) to start the table header");
        base = key() + (array_of_tables ? 1 : 0);
        reached(base);
        skip_to_eol();
      } else {
        const int d = base + key();
        reached(d);
        skip_blanks();
        if (!eof() && cur() == '=') {
          ++p_;
          value(d);
        }
        skip_to_eol();
      }
      if (p_ == before) ++p_;  // always move on, whatever the input
    }
  }

  std::string_view t_;
  size_t p_ = 0;
  int max_;
  TomlNesting r_;
};

}  // namespace

TomlNesting toml_nesting(std::string_view text, int max_depth) {
  return Scanner(text, max_depth).run();
}

}  // namespace dplab
