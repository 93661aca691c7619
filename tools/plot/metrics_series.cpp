#include "dplab/tools/plot/metrics_series.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "dplab/core/error.h"

namespace dplab::plot {
namespace {

std::string value_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", int64_t(v))
                                                  : fmt::format("{:g}", v);
}

std::optional<double> number(const nlohmann::json& j, const std::string& k) {
  auto it = j.find(k);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string joined(const std::set<std::string>& s, const std::string& if_empty) {
  std::string r;
  for (const auto& k : s) r += (r.empty() ? "" : ", ") + k;
  return r.empty() ? if_empty : r;
}

// A JSON library error without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix (the line is the file's, given separately), the column kept, and at most
// 120 characters of it (an overlong token is quoted whole).
std::string json_error_text(const nlohmann::json::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0 && s.find("] ") != std::string::npos)
    s = s.substr(s.find("] ") + 2);
  if (s.rfind("parse error", 0) == 0 && s.find(": ") != std::string::npos)
    s = s.substr(s.find(": ") + 2);
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  if (const auto* p = dynamic_cast<const nlohmann::json::parse_error*>(&e))
    s += fmt::format(" at column {}", p->byte);
  return s;
}

}  // namespace

MetricsFile read_metrics_file(const std::string& path) {
  std::ifstream in(path);
  DPLAB_CHECK(in.good(), "cannot open metrics file '{}'", path);
  MetricsFile f;
  f.path = path;
  std::string line;
  // A line that is not a complete JSON object fails the file only once a later line shows that
  // it was not the last: the last line may have been torn by a run killed while writing it.
  std::string torn;
  int64_t torn_line = 0;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    DPLAB_CHECK(torn.empty(), "{}:{}: {}: expected one JSON object per line", path, torn_line,
                torn);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      torn = fmt::format("not a JSON line ({})", json_error_text(e));
      torn_line = lineno;
      continue;
    } catch (const nlohmann::json::exception& e) {  // 1e999: a complete line, not a torn one
      DPLAB_FAIL("{}:{}: {}: expected numbers within the range of a double (about 1.8e308)", path,
                 lineno, json_error_text(e));
    }
    if (!j.is_object()) {
      torn = fmt::format("a JSON {}, not an object", j.type_name());
      torn_line = lineno;
      continue;
    }
    f.records.push_back(std::move(j));
    f.lines.push_back(lineno);
  }
  if (!torn.empty())
    f.warnings.push_back(
        fmt::format("{}:{}: skipped the last line, {}: torn by a run stopped while writing it?",
                    path, torn_line, torn));
  return f;
}

std::string record_kind(const nlohmann::json& record) {
  auto it = record.find("kind");
  return it != record.end() && it->is_string() ? it->get<std::string>() : "epoch";
}

MetricsSeries series_of(const MetricsFile& file, const SeriesRequest& req) {
  MetricsSeries out;
  std::vector<size_t> recs;  // indices of the records of the kind
  std::set<std::string> kinds, keys;
  for (size_t i = 0; i < file.records.size(); ++i) {
    const auto& j = file.records[i];
    const std::string kind = record_kind(j);
    kinds.insert(kind);
    if (kind == "final")
      if (auto y = number(j, req.y_key)) out.final_y = y;
    if (kind != req.kind) continue;
    recs.push_back(i);
    for (const auto& [k, v] : j.items())
      if (v.is_number()) keys.insert(k);
  }
  DPLAB_CHECK(!recs.empty(), "{}: no record of kind '{}' (kinds: {})", file.path, req.kind,
              joined(kinds, "none, the file is empty"));

  // The running sum of time_s stands in for a missing elapsed_s.
  std::vector<std::optional<double>> elapsed(recs.size());
  const bool wants_elapsed = req.x_key == kElapsedKey || req.y_key == kElapsedKey;
  if (wants_elapsed && !keys.count(kElapsedKey) && keys.count("time_s")) {
    out.elapsed_from_time_s = true;
    double sum = 0;
    for (size_t i = 0; i < recs.size(); ++i)
      if (auto t = number(file.records[recs[i]], "time_s")) {
        elapsed[i] = sum += *t;
        DPLAB_CHECK(std::isfinite(sum),
                    "{}:{}: time_s {} takes elapsed_s (the running sum of time_s) past the "
                    "largest double: expected durations in seconds",
                    file.path, file.lines[recs[i]], *t);
      }
    keys.insert(kElapsedKey);
  }
  const auto value = [&](size_t i, const std::string& k) {
    return out.elapsed_from_time_s && k == kElapsedKey ? elapsed[i]
                                                       : number(file.records[recs[i]], k);
  };
  for (const auto& k : {req.x_key, req.y_key})
    if (!keys.count(k))
      throw MissingKey(fmt::format("{}: no record of kind '{}' has the numeric key '{}' (keys: {})",
                                   file.path, req.kind, k, joined(keys, "none")),
                       k, keys);

  Series& s = out.series;
  std::optional<double> prev_x, prev_marker;
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto x = value(i, req.x_key), y = value(i, req.y_key);
    if (!x || !y) continue;
    if (!req.marker_key.empty()) {
      if (auto m = number(file.records[recs[i]], req.marker_key)) {
        out.marker_key_found = true;
        if (prev_marker && *m != *prev_marker)
          s.markers.push_back(
              {prev_x.value_or(*x), fmt::format("{}={}", req.marker_key, value_text(*m))});
        prev_marker = m;
      }
    }
    s.x.push_back(*x);
    s.y.push_back(*y);
    prev_x = x;
  }
  DPLAB_CHECK(!s.x.empty(), "{}: no record of kind '{}' has both '{}' and '{}'", file.path,
              req.kind, req.x_key, req.y_key);
  return out;
}

}  // namespace dplab::plot
