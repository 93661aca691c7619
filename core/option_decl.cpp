#include "dplab/core/option_decl.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

using Kind = ValueRule::Kind;

std::string joined_choices(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

// "an integer >= 1", "a number in [0, 1]".
std::string range_expectation(const ValueRule& r) {
  const std::string what = r.kind == Kind::integer ? "an integer" : "a number";
  const bool lo = std::isfinite(r.min), hi = std::isfinite(r.max);
  if (lo && hi) return fmt::format("{} in [{}, {}{}", what, r.min, r.max, r.max_open ? ")" : "]");
  if (lo) return fmt::format("{} >= {}", what, r.min);
  if (hi) return fmt::format("{} {} {}", what, r.max_open ? "<" : "<=", r.max);
  return what;
}

// Parses `value` as the rule's integer or number; false when it is not one (or not finite).
bool parse_number(const ValueRule& r, const std::string& value, double& v) {
  if (r.kind == Kind::integer) {
    int64_t i = 0;
    auto res = std::from_chars(value.data(), value.data() + value.size(), i);
    v = double(i);
    return res.ec == std::errc() && res.ptr == value.data() + value.size();
  }
  try {
    size_t pos = 0;
    v = std::stod(value, &pos);
    return pos == value.size() && std::isfinite(v);
  } catch (const std::logic_error&) {
    return false;
  }
}

}  // namespace

ValueRule text() {
  return ValueRule{};
}
ValueRule integer(double min, double max) {
  ValueRule r;
  r.kind = Kind::integer;
  r.min = min;
  r.max = max;
  return r;
}
ValueRule number(double min, double max, bool max_open) {
  ValueRule r;
  r.kind = Kind::number;
  r.min = min;
  r.max = max;
  r.max_open = max_open;
  return r;
}
ValueRule boolean() {
  ValueRule r;
  r.kind = Kind::boolean;
  return r;
}
ValueRule choice(std::function<std::vector<std::string>()> values) {
  ValueRule r;
  r.kind = Kind::choice;
  r.choices = std::move(values);
  return r;
}
ValueRule choice(std::vector<std::string> values) {
  return choice([values] { return values; });
}

std::string rule_expectation(const ValueRule& r) {
  switch (r.kind) {
    case Kind::text:
      return "a string";
    case Kind::boolean:
      return "true or false";
    case Kind::choice:
      return joined_choices(r.choices());
    case Kind::integer:
    case Kind::number:
      return range_expectation(r);
  }
  return "";
}

std::string check_choice(const std::string& key, const std::string& value,
                         const std::vector<std::string>& names) {
  for (const auto& ok : names)
    if (value == ok) return "";
  return fmt::format("option {}: unknown value {}{}; expected {}", key, quoted_excerpt(value),
                     did_you_mean(value, names), joined_choices(names));
}

std::string check_value(const std::string& key, const ValueRule& r, const std::string& value) {
  switch (r.kind) {
    case Kind::text:
      return "";
    case Kind::boolean:
      for (const char* ok : {"true", "1", "yes", "on", "false", "0", "no", "off"})
        if (value == ok) return "";
      return fmt::format("option {}: expected true or false, got {}", key, quoted_excerpt(value));
    case Kind::choice:
      return check_choice(key, value, r.choices());
    case Kind::integer:
    case Kind::number: {
      double v = 0;
      const bool in_range =
          parse_number(r, value, v) && v >= r.min && (r.max_open ? v < r.max : v <= r.max);
      if (in_range) return "";
      return fmt::format("option {}: expected {}, got {}", key, range_expectation(r),
                         quoted_excerpt(value));
    }
  }
  return "";
}

OptionTable::OptionTable(std::vector<OptionDecl> decls) : decls_(std::move(decls)) {
  for (const OptionDecl& d : decls_) {
    // A declared default outside its own rule is a bug of the declaration. Choices may come
    // from a registry filled later, and a default in parentheses ("(seed)") is computed by the
    // reader: neither is checked here.
    const bool checked =
        d.rule.kind != ValueRule::Kind::choice && !d.default_value.starts_with("(");
    DPLAB_CHECK(!checked || check_value(d.key, d.rule, d.default_value).empty(),
                "option table: the default of {} does not fit its rule: {}", d.key,
                check_value(d.key, d.rule, d.default_value));
  }
}

const OptionDecl& OptionTable::at(const std::string& key) const {
  for (const OptionDecl& d : decls_)
    if (d.key == key) return d;
  DPLAB_FAIL("option table: {} is read but not declared", key);
}

void OptionTable::check(const Options& opt, const OptionDecl& d) const {
  const auto it = opt.values().find(d.key);
  if (it == opt.values().end()) return;
  if (const std::string why = check_value(d.key, d.rule, it->second); !why.empty())
    throw UsageError(why);
}

int64_t OptionTable::get_int(const Options& opt, const std::string& key) const {
  const OptionDecl& d = at(key);
  check(opt, d);
  return opt.get_int(key, std::stoll(d.default_value));
}
double OptionTable::get_double(const Options& opt, const std::string& key) const {
  const OptionDecl& d = at(key);
  check(opt, d);
  return opt.get_double(key, std::stod(d.default_value));
}
bool OptionTable::get_bool(const Options& opt, const std::string& key) const {
  const OptionDecl& d = at(key);
  check(opt, d);
  return opt.get_bool(key, d.default_value == "true");
}
std::string OptionTable::get_string(const Options& opt, const std::string& key) const {
  const OptionDecl& d = at(key);
  check(opt, d);
  return opt.get_string(key, d.default_value);
}

int64_t OptionTable::get_int(const Options& opt, const std::string& key,
                             int64_t computed_default) const {
  check(opt, at(key));
  return opt.get_int(key, computed_default);
}
double OptionTable::get_double(const Options& opt, const std::string& key,
                               double computed_default) const {
  check(opt, at(key));
  return opt.get_double(key, computed_default);
}
bool OptionTable::get_bool(const Options& opt, const std::string& key,
                           bool computed_default) const {
  check(opt, at(key));
  return opt.get_bool(key, computed_default);
}

OptionTable OptionTable::prefixed(const std::string& prefix, const std::string& what) const {
  std::vector<OptionDecl> all = decls_;
  for (OptionDecl& d : all) {
    d.key = prefix + d.key;
    d.help = what + ": " + d.help;
  }
  return OptionTable(std::move(all));
}

int64_t OptionTable::default_int(const std::string& key) const {
  return std::stoll(at(key).default_value);
}
double OptionTable::default_double(const std::string& key) const {
  return std::stod(at(key).default_value);
}
bool OptionTable::default_bool(const std::string& key) const {
  return at(key).default_value == "true";
}
const std::string& OptionTable::default_string(const std::string& key) const {
  return at(key).default_value;
}
int OptionTable::default_choice_index(const std::string& key) const {
  return choice_index(key, at(key).default_value);
}
int OptionTable::choice_index(const std::string& key, const std::string& value) const {
  const OptionDecl& d = at(key);
  DPLAB_CHECK(d.rule.kind == ValueRule::Kind::choice, "option table: {} is not a choice", key);
  const std::vector<std::string> c = d.rule.choices();
  const auto it = std::find(c.begin(), c.end(), value);
  DPLAB_CHECK(it != c.end(), "option table: '{}' is not one of {}'s choices", value, key);
  return int(it - c.begin());
}

OptionTable OptionTable::with(const OptionTable& other) const {
  std::vector<OptionDecl> all = decls_;
  all.insert(all.end(), other.decls().begin(), other.decls().end());
  return OptionTable(std::move(all));
}

}  // namespace dplab
