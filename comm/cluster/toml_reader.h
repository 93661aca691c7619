// Reading a cluster file's TOML with errors that name the file, the line and the key
// (platform_toml.cpp, events_toml.cpp).
#pragma once
#include <fmt/format.h>

#include <toml++/toml.h>
#include <fstream>
#include <string>
#include <string_view>

#include "dplab/core/error.h"

namespace dplab::cluster::toml_read {

inline const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date or time";
  }
}

struct Reader {
  std::string path;

  std::string where(const toml::node& n, const std::string& key) const {
    return fmt::format("{}:{}: key '{}'", path, n.source().begin.line, key);
  }
  std::string string(const toml::node& n, const std::string& key, const char* expected) const {
    auto s = n.as_string();
    DPLAB_CHECK(s, "{}: expected {}, got {}", where(n, key), expected, type_name(n));
    return s->get();
  }
  double number(const toml::node& n, const std::string& key, const char* expected) const {
    if (auto f = n.as_floating_point()) return f->get();
    if (auto i = n.as_integer()) return double(i->get());
    DPLAB_FAIL("{}: expected {}, got {}", where(n, key), expected, type_name(n));
  }
  int integer(const toml::node& n, const std::string& key, const char* expected) const {
    auto i = n.as_integer();
    DPLAB_CHECK(i, "{}: expected {}, got {}", where(n, key), expected, type_name(n));
    DPLAB_CHECK(i->get() >= 1 && i->get() <= (1 << 24), "{}: expected {}, got {}", where(n, key),
                expected, i->get());
    return int(i->get());
  }
};

// `text` parsed as TOML; a syntax error names the file, line and column, and a text larger than
// `max` bytes is refused ("cluster file", "events file": `what`).
inline toml::table parse_small_toml(std::string_view text, const std::string& path, size_t max,
                                    const char* what) {
  DPLAB_CHECK(text.size() <= max, "{}: {} bytes exceed the {} bytes a {} may have", path,
              text.size(), max, what);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    DPLAB_FAIL("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column,
               e.description());
  }
}

// The text of a small file, one byte more than `max` when it is larger (the parser then
// refuses it by size); `what` ("cluster file") names it in errors.
inline std::string read_small_file(const std::string& path, size_t max, const char* what) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(in.good(), "{}: cannot open the {}", path, what);
  std::string text(max + 1, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  DPLAB_CHECK(!in.bad(), "{}: read error", path);
  text.resize(size_t(in.gcount()));
  return text;
}

}  // namespace dplab::cluster::toml_read

#include "dplab/comm/cluster/events.h"

namespace dplab::cluster {
// The [[event]] tables of `path` (the array under key `event`; events_toml.cpp).
Events read_events(const toml::node& tables, const std::string& path);
}  // namespace dplab::cluster
