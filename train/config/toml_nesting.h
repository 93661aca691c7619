// How deeply a TOML document nests tables and arrays, measured on the text before any parser
// sees it. toml++ builds (and frees) a dotted key or table header of 50,000 parts as 50,000
// nested tables by recursion, which overflows the stack; it bounds inline arrays and tables
// (TOML_MAX_NESTED_VALUES) but not dotted keys. This scanner needs no parse tree: it lexes
// strings and comments, counts the parts of every key (table headers, keys, keys inside inline
// tables) and the brackets of arrays and inline tables, and stops at the first place deeper than
// the limit, so its own recursion is bounded too.
#pragma once
#include <cstddef>
#include <string_view>

namespace dplab {

struct TomlNesting {
  int depth = 0;  // deepest nesting seen (a top-level key is 1; [a.b] c = [1] puts 1 at 4)
  size_t line = 0, column = 0;  // 1-based position where that depth was reached
  bool exceeded = false;        // scanning stopped at the first place deeper than max_depth
  // Syntax toml++ 3.3 mishandles instead of reporting: a non-ASCII character outside strings and
  // comments ("é = 1": undefined behaviour in its whitespace test), and, where it asserts (an
  // assumption the optimiser may exploit under clang), a table header whose first key does not
  // start with a key character or quote ("[$a]", "[#", "[" at the end of a line) and an array
  // element starting with '}' ("[}"). Scanning stops there; `expected` says what should have
  // come.
  bool malformed = false;
  const char* expected = "";
  size_t bad_line = 0, bad_column = 0, bad_offset = 0;
};

// Valid TOML is measured exactly; invalid TOML is measured up to where toml++ would stop, which
// is all it would build before failing.
TomlNesting toml_nesting(std::string_view text, int max_depth);

}  // namespace dplab
