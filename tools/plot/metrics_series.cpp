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

}  // namespace

MetricsFile read_metrics_file(const std::string& path) {
  std::ifstream in(path);
  DPLAB_CHECK(in.good(), "cannot open metrics file '{}'", path);
  MetricsFile f;
  f.path = path;
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
    f.records.push_back(std::move(j));
    f.lines.push_back(lineno);
  }
  return f;
}

std::string record_kind(const nlohmann::json& record) {
  auto it = record.find("kind");
  return it != record.end() && it->is_string() ? it->get<std::string>() : "epoch";
}

MetricsSeries series_of(const MetricsFile& file, const SeriesRequest& req) {
  MetricsSeries out;
  std::vector<const nlohmann::json*> recs;
  std::set<std::string> kinds, keys;
  for (const auto& j : file.records) {
    kinds.insert(record_kind(j));
    if (record_kind(j) == "final")
      if (auto y = number(j, req.y_key)) out.final_y = y;
    if (record_kind(j) != req.kind) continue;
    recs.push_back(&j);
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
      if (auto t = number(*recs[i], "time_s")) elapsed[i] = sum += *t;
    keys.insert(kElapsedKey);
  }
  const auto value = [&](size_t i, const std::string& k) {
    return out.elapsed_from_time_s && k == kElapsedKey ? elapsed[i] : number(*recs[i], k);
  };
  for (const auto& k : {req.x_key, req.y_key})
    DPLAB_CHECK(keys.count(k), "{}: no record of kind '{}' has the numeric key '{}' (keys: {})",
                file.path, req.kind, k, joined(keys, "none"));

  Series& s = out.series;
  std::optional<double> prev_x, prev_marker;
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto x = value(i, req.x_key), y = value(i, req.y_key);
    if (!x || !y) continue;
    if (!req.marker_key.empty()) {
      if (auto m = number(*recs[i], req.marker_key)) {
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
