#include "dplab/tools/plot/metrics_series.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "dplab/core/error.h"

namespace dplab::plot {
namespace {

std::string value_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", int64_t(v))
                                                  : fmt::format("{:g}", v);
}

}  // namespace

Series read_metrics_series(const std::string& path, const std::string& x_key,
                           const std::string& y_key, const std::string& marker_key,
                           bool* marker_key_found) {
  std::ifstream in(path);
  DPLAB_CHECK(in.good(), "cannot open metrics file '{}'", path);
  Series s;
  std::set<std::string> keys;
  bool any_x = false, any_y = false, any_marker = false;
  std::optional<double> prev_x, prev_marker;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      DPLAB_FAIL("{}:{}: not a JSON line: {}", path, lineno, e.what());
    }
    DPLAB_CHECK(j.is_object(), "{}:{}: expected a JSON object, got {}", path, lineno,
                j.type_name());
    // Step records and the final record are no epoch series (docs/metrics_schema.md).
    if (const auto kind = j.find("kind"); kind != j.end() && (*kind == "step" || *kind == "final"))
      continue;
    for (const auto& [k, v] : j.items()) keys.insert(k);
    const auto num = [&](const std::string& k) -> std::optional<double> {
      auto it = j.find(k);
      if (it == j.end() || !it->is_number()) return std::nullopt;
      return it->get<double>();
    };
    const auto x = num(x_key), y = num(y_key);
    any_x |= x.has_value();
    any_y |= y.has_value();
    if (!x || !y) continue;
    if (!marker_key.empty()) {
      if (auto m = num(marker_key)) {
        any_marker = true;
        if (prev_marker && *m != *prev_marker)
          s.markers.push_back(
              {prev_x.value_or(*x), fmt::format("{}={}", marker_key, value_text(*m))});
        prev_marker = m;
      }
    }
    s.x.push_back(*x);
    s.y.push_back(*y);
    prev_x = x;
  }
  std::string known;
  for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
  for (const auto& [k, any] : {std::pair{x_key, any_x}, std::pair{y_key, any_y}})
    DPLAB_CHECK(any, "{}: no record has the numeric key '{}' (keys: {})", path, k,
                known.empty() ? "none, the file is empty" : known);
  DPLAB_CHECK(!s.x.empty(), "{}: no record has both '{}' and '{}'", path, x_key, y_key);
  if (marker_key_found) *marker_key_found = any_marker;
  return s;
}

}  // namespace dplab::plot
