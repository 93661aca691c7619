#include "dplab/core/state_dict.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "dplab/core/error.h"

namespace dplab {
namespace {

std::string exact(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.17g}", v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> r;
  if (s.empty()) return r;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    r.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return r;
}

template <class T>
std::string join(const std::vector<T>& v, std::string (*fmt_one)(T)) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) r += ',';
    r += fmt_one(v[i]);
  }
  return r;
}

std::string int_text(int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string StateDict::where() const {
  return origin_.empty() ? std::string("state") : origin_;
}

void StateDict::check_new(const std::string& name) const {
  DPLAB_CHECK(!has(name), "{}: state entry '{}' written twice", where(), name);
}

void StateDict::put_tensor(const std::string& name, const Tensor& t) {
  check_new(name);
  DPLAB_CHECK(t.defined(), "{}: state tensor '{}' is undefined", where(), name);
  tensors_.push_back({name, t});
}
void StateDict::put_int(const std::string& name, int64_t v) {
  check_new(name);
  values_[name] = int_text(v);
}
void StateDict::put_double(const std::string& name, double v) {
  check_new(name);
  values_[name] = exact(v);
}
void StateDict::put_bool(const std::string& name, bool v) {
  check_new(name);
  values_[name] = v ? "true" : "false";
}
void StateDict::put_string(const std::string& name, const std::string& v) {
  check_new(name);
  values_[name] = v;
}
void StateDict::put_doubles(const std::string& name, const std::vector<double>& v) {
  check_new(name);
  values_[name] = join<double>(v, exact);
}
void StateDict::put_ints(const std::string& name, const std::vector<int64_t>& v) {
  check_new(name);
  values_[name] = join<int64_t>(v, int_text);
}

bool StateDict::has(const std::string& name) const {
  if (values_.count(name)) return true;
  for (const auto& t : tensors_)
    if (t.name == name) return true;
  return false;
}

const Tensor& StateDict::tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t.tensor;
  DPLAB_FAIL("{}: state tensor '{}' missing", where(), name);
}

const std::string& StateDict::value(const std::string& name) const {
  auto it = values_.find(name);
  DPLAB_CHECK(it != values_.end(), "{}: state value '{}' missing", where(), name);
  return it->second;
}

int64_t StateDict::get_int(const std::string& name) const {
  const std::string& s = value(name);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  DPLAB_CHECK(ec == std::errc() && p == s.data() + s.size(),
              "{}: state value '{}' = '{}': expected an integer", where(), name, s);
  return v;
}

namespace {
bool parse_double(const std::string& s, double& v) {
  if (s == "nan") return v = std::numeric_limits<double>::quiet_NaN(), true;
  if (s == "inf") return v = std::numeric_limits<double>::infinity(), true;
  if (s == "-inf") return v = -std::numeric_limits<double>::infinity(), true;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

double StateDict::get_double(const std::string& name) const {
  const std::string& s = value(name);
  double v = 0;
  DPLAB_CHECK(parse_double(s, v), "{}: state value '{}' = '{}': expected a number", where(), name,
              s);
  return v;
}

bool StateDict::get_bool(const std::string& name) const {
  const std::string& s = value(name);
  DPLAB_CHECK(s == "true" || s == "false", "{}: state value '{}' = '{}': expected true or false",
              where(), name, s);
  return s == "true";
}

const std::string& StateDict::get_string(const std::string& name) const {
  return value(name);
}

std::vector<double> StateDict::get_doubles(const std::string& name) const {
  std::vector<double> r;
  for (const std::string& s : split(value(name))) {
    double v = 0;
    DPLAB_CHECK(parse_double(s, v), "{}: state value '{}': element '{}' is not a number", where(),
                name, s);
    r.push_back(v);
  }
  return r;
}

std::vector<int64_t> StateDict::get_ints(const std::string& name) const {
  std::vector<int64_t> r;
  for (const std::string& s : split(value(name))) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    DPLAB_CHECK(ec == std::errc() && p == s.data() + s.size(),
                "{}: state value '{}': element '{}' is not an integer", where(), name, s);
    r.push_back(v);
  }
  return r;
}

void StateDict::merge(const std::string& prefix, const StateDict& other) {
  for (const auto& t : other.tensors_) put_tensor(prefix + t.name, t.tensor);
  for (const auto& [k, v] : other.values_) {
    check_new(prefix + k);
    values_[prefix + k] = v;
  }
}

StateDict StateDict::sub(const std::string& prefix) const {
  StateDict r(origin_);
  for (const auto& t : tensors_)
    if (t.name.starts_with(prefix)) r.tensors_.push_back({t.name.substr(prefix.size()), t.tensor});
  for (const auto& [k, v] : values_)
    if (k.starts_with(prefix)) r.values_[k.substr(prefix.size())] = v;
  return r;
}

void StateDict::assign(std::vector<NamedTensor> tensors,
                       std::map<std::string, std::string> values) {
  tensors_ = std::move(tensors);
  values_ = std::move(values);
}

}  // namespace dplab
