#include "dplab/core/options.h"

#include <charconv>
#include <system_error>

#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

std::string double_text(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string Options::get_string(const std::string& key, const std::string& def) const {
  used_.insert(key);
  auto it = values_.find(key);
  defaults_read_.emplace(key, def);
  return it == values_.end() ? def : it->second;
}

int64_t Options::get_int(const std::string& key, int64_t def) const {
  used_.insert(key);
  auto it = values_.find(key);
  defaults_read_.emplace(key, std::to_string(def));
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    throw UsageError(
        fmt::format("option {}: expected an integer, got {}", excerpt(key), quoted_excerpt(s)));
  return v;
}

double Options::get_double(const std::string& key, double def) const {
  used_.insert(key);
  auto it = values_.find(key);
  defaults_read_.emplace(key, double_text(def));
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::logic_error&) {
    pos = std::string::npos;
  }
  if (pos != s.size())
    throw UsageError(
        fmt::format("option {}: expected a number, got {}", excerpt(key), quoted_excerpt(s)));
  return v;
}

bool Options::get_bool(const std::string& key, bool def) const {
  used_.insert(key);
  auto it = values_.find(key);
  defaults_read_.emplace(key, def ? "true" : "false");
  if (it == values_.end()) return def;
  const std::string& s = it->second;
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw UsageError(
      fmt::format("option {}: expected true or false, got {}", excerpt(key), quoted_excerpt(s)));
}

std::string Options::require_string(const std::string& key) const {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end())
    throw UsageError(fmt::format("missing required option {}", quoted_excerpt(key)));
  return it->second;
}

std::vector<std::string> Options::unused_keys() const {
  std::vector<std::string> r;
  for (auto& [k, v] : values_)
    if (!used_.count(k)) r.push_back(k);
  return r;
}

std::map<std::string, std::string> Options::with_prefix(const std::string& prefix) const {
  std::map<std::string, std::string> r;
  for (auto& [k, v] : values_)
    if (k.rfind(prefix, 0) == 0) r[k] = v;
  return r;
}

std::optional<std::string> Options::default_read(const std::string& key) const {
  auto it = defaults_read_.find(key);
  if (it == defaults_read_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, std::string> Options::read_values() const {
  std::map<std::string, std::string> r;
  for (const auto& k : used_) {
    auto it = values_.find(k);
    if (it != values_.end())
      r[k] = it->second;
    else if (auto d = defaults_read_.find(k); d != defaults_read_.end())
      r[k] = d->second;
  }
  return r;
}

}  // namespace dplab
