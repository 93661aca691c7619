#include "dplab/tools/plot/runs.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "dplab/core/error.h"

namespace dplab::plot {
namespace fs = std::filesystem;

std::string metrics_path_of(const std::string& arg) {
  if (!fs::is_directory(arg)) return arg;
  const fs::path p = fs::path(arg) / "metrics.jsonl";
  DPLAB_CHECK(fs::exists(p), "run directory '{}' has no metrics.jsonl", arg);
  return p.string();
}

std::vector<std::string> default_labels(const std::vector<std::string>& run_dirs) {
  for (int depth = 1;; ++depth) {
    std::vector<std::string> r;
    bool more = false;  // some path has components left
    for (const auto& d : run_dirs) {
      fs::path p = fs::absolute(d).lexically_normal();
      if (p.filename().empty()) p = p.parent_path();  // a trailing slash
      std::vector<std::string> parts;
      for (int k = 0; k < depth && p.has_relative_path(); ++k, p = p.parent_path())
        parts.insert(parts.begin(), p.filename().string());
      more |= p.has_relative_path();
      std::string s;
      for (const auto& x : parts) s += (s.empty() ? "" : "/") + x;
      r.push_back(s);
    }
    if (std::set<std::string>(r.begin(), r.end()).size() == r.size() || !more) return r;
  }
}

std::string strip_seed(const std::string& label) {
  static const std::regex seed(R"((^|[/_\-. ])seed[_=\-]?[0-9]+$)");
  std::smatch m;
  if (!std::regex_search(label, m, seed) || m.position(0) == 0) return label;
  return label.substr(0, size_t(m.position(0)));
}

bool run_option(const std::string& run_dir, const std::string& key, std::string* value) {
  const fs::path path = fs::path(run_dir) / "run.json";
  if (!fs::exists(path)) return false;
  std::ifstream in(path);
  DPLAB_CHECK(in.good(), "cannot open '{}'", path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    DPLAB_FAIL("{}: not JSON: {}", path.string(), e.what());
  }
  DPLAB_CHECK(j.is_object() && j.contains("options") && j["options"].is_object(),
              "{}: expected an object with an \"options\" object", path.string());
  const nlohmann::json& options = j["options"];
  const nlohmann::json* v = nullptr;
  if (auto it = options.find(key); it != options.end()) v = &*it;
  if (!v) {  // nested: {"optim": {"lr": ...}}
    const nlohmann::json* node = &options;
    size_t start = 0;
    for (;;) {
      const size_t dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
      if (!node->is_object() || !node->contains(part)) {
        node = nullptr;
        break;
      }
      node = &(*node)[part];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    v = node;
  }
  if (!v) {
    std::string keys;
    for (const auto& [k, x] : options.items()) keys += (keys.empty() ? "" : ", ") + k;
    DPLAB_FAIL("{}: no option '{}' (options: {})", path.string(), key, keys);
  }
  if (v->is_object() && v->contains("value")) v = &(*v)["value"];
  if (v->is_string())
    *value = v->get<std::string>();
  else if (v->is_number_float() && v->get<double>() == std::floor(v->get<double>()) &&
           std::abs(v->get<double>()) < 1e15)
    *value = fmt::format("{}", int64_t(v->get<double>()));
  else if (v->is_number_float())
    *value = fmt::format("{:g}", v->get<double>());
  else
    *value = v->dump();
  return true;
}

}  // namespace dplab::plot
