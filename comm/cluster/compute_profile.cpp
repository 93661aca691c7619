#include "dplab/comm/cluster/compute_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dplab/core/error.h"

namespace dplab::cluster {

double ComputeProfile::bucket_ready_fraction(int first, int last) const {
  DPLAB_CHECK(first >= 0 && first <= last && last < int(segments.size()),
              "compute profile of {}: segments [{}, {}] out of range [0, {})", model, first, last,
              segments.size());
  double f = 0;
  for (int s = first; s <= last; ++s) f = std::max(f, segments[s].ready_fraction);
  return f;
}

double step_log_sigma(const std::vector<double>& step_s) {
  const size_t n = step_s.size();
  if (n < 2) return 0.0;
  std::vector<double> l(n);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) {
    DPLAB_CHECK(step_s[i] > 0, "step_log_sigma: step {} took {} s (expected > 0)", i, step_s[i]);
    l[i] = std::log(step_s[i]);
    mean += l[i] / static_cast<double>(n);
  }
  double ss = 0;
  for (double v : l) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(n - 1));
}

std::string compute_profile_json(const ComputeProfile& p) {
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& s : p.segments)
    segs.push_back({{"name", s.name}, {"numel", s.numel}, {"ready_fraction", s.ready_fraction}});
  return nlohmann::json{{"dplab_compute_profile", 1},
                        {"model", p.model},
                        {"batch", p.batch},
                        {"device", p.device},
                        {"threads", p.threads},
                        {"steps", p.steps},
                        {"forward_s", p.forward_s},
                        {"backward_s", p.backward_s},
                        {"optimizer_s", p.optimizer_s},
                        {"check_s", p.check_s},
                        {"step_log_sigma", p.step_log_sigma},
                        {"segments", segs}}
      .dump(1);
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const std::string& key,
                            const std::string& where) {
  DPLAB_CHECK(j.is_object() && j.contains(key), "{}: key '{}' missing", where, key);
  return j.at(key);
}

// `what`: "a number of seconds", "a number" (a spread).
double nonnegative(const nlohmann::json& j, const std::string& key, const std::string& path,
                   const char* what = "a number of seconds") {
  const auto& v = field(j, key, path);
  DPLAB_CHECK(v.is_number() && v.get<double>() >= 0, "{}: key '{}': expected {} >= 0, got {}", path,
              key, what, v.dump());
  return v.get<double>();
}

int64_t count(const nlohmann::json& j, const std::string& key, const std::string& where,
              int64_t min) {
  const auto& v = field(j, key, where);
  DPLAB_CHECK(v.is_number_integer() && v.get<int64_t>() >= min,
              "{}: key '{}': expected an integer >= {}, got {}", where, key, min, v.dump());
  return v.get<int64_t>();
}

std::string text(const nlohmann::json& j, const std::string& key, const std::string& where) {
  const auto& v = field(j, key, where);
  DPLAB_CHECK(v.is_string(), "{}: key '{}': expected a string, got {}", where, key, v.dump());
  return v.get<std::string>();
}

}  // namespace

ComputeProfile parse_compute_profile(const std::string& body, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    DPLAB_FAIL("{}: not JSON (byte {}): {}", path, e.byte, e.what());
  }
  DPLAB_CHECK(j.is_object() && j.value("dplab_compute_profile", 0) == 1,
              "{}: key 'dplab_compute_profile': expected 1 (a file written by dplab bench train "
              "--profile-out)",
              path);
  ComputeProfile p;
  p.model = text(j, "model", path);
  p.batch = count(j, "batch", path, 1);
  p.device = text(j, "device", path);
  p.threads = count(j, "threads", path, 0);
  p.steps = count(j, "steps", path, 1);
  p.forward_s = nonnegative(j, "forward_s", path);
  p.backward_s = nonnegative(j, "backward_s", path);
  p.optimizer_s = nonnegative(j, "optimizer_s", path);
  // Optional: profiles recorded before the check was (their runs charge no check).
  if (j.contains("check_s")) p.check_s = nonnegative(j, "check_s", path);
  // Optional: profiles recorded before the spread was. A number >= 0 (a spread, not seconds).
  if (j.contains("step_log_sigma"))
    p.step_log_sigma = nonnegative(j, "step_log_sigma", path, "a number");
  const auto& segs = field(j, "segments", path);
  DPLAB_CHECK(segs.is_array() && !segs.empty(),
              "{}: key 'segments': expected a non-empty array, got {}", path,
              segs.is_array() ? "an empty one" : segs.type_name());
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string where = fmt::format("{}: segments[{}]", path, i);
    ComputeProfile::Segment s;
    s.name = text(segs[i], "name", where);
    s.numel = count(segs[i], "numel", where, 1);
    const auto& f = field(segs[i], "ready_fraction", where);
    DPLAB_CHECK(f.is_number() && f.get<double>() >= 0 && f.get<double>() <= 1,
                "{}: key 'ready_fraction': expected a number in [0, 1], got {}", where, f.dump());
    s.ready_fraction = f.get<double>();
    p.segments.push_back(s);
  }
  return p;
}

ComputeProfile load_compute_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(in.good(), "{}: cannot open the compute profile", path);
  std::ostringstream s;
  s << in.rdbuf();
  return parse_compute_profile(s.str(), path);
}

}  // namespace dplab::cluster
