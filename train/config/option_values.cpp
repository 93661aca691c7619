#include "dplab/train/config/option_values.h"

#include "dplab/train/config/config.h"

#include <fmt/format.h>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

const ValueRule* option_value_rule(const std::string& key) {
  for (const OptionSpec& s : train_option_specs())
    if (s.key == key) return s.rule.kind == ValueRule::Kind::text ? nullptr : &s.rule;
  return nullptr;
}

std::string option_expectation(const std::string& key) {
  const ValueRule* r = option_value_rule(key);
  return r ? rule_expectation(*r) : "a string, number, boolean or an array of them";
}

std::string option_type_name(const std::string& key) {
  const ValueRule* r = option_value_rule(key);
  if (!r) return "TEXT";
  switch (r->kind) {
    case ValueRule::Kind::integer:
      return "INT";
    case ValueRule::Kind::number:
      return "FLOAT";
    case ValueRule::Kind::boolean:
      return "BOOL";
    case ValueRule::Kind::choice: {
      std::string s;
      for (const auto& c : r->choices()) s += (s.empty() ? "" : "|") + c;
      return s.size() <= 40 ? s : "NAME";
    }
    case ValueRule::Kind::text:
      return "TEXT";
  }
  return "TEXT";
}

std::string check_option_value(const std::string& key, const std::string& value) {
  const ValueRule* r = option_value_rule(key);
  return r ? check_value(key, *r, value) : "";
}

void check_option_values(const Options& opt) {
  for (const auto& [key, value] : opt.values()) {
    const std::string why = check_option_value(key, value);
    if (!why.empty()) throw UsageError(why);
  }
}

std::string config_value_place(const std::string& key, const std::string& path,
                               const std::map<std::string, std::string>* places) {
  if (places)
    if (const auto it = places->find(key); it != places->end()) return it->second;
  return path;
}

void check_config_values(const Options& from_file, const Options& opt, const std::string& path,
                         const std::map<std::string, std::string>* places) {
  for (const auto& [key, value] : from_file.values()) {
    const auto it = opt.values().find(key);
    if (it == opt.values().end() || it->second != value) continue;  // a flag or --set replaced it
    const std::string why = check_option_value(key, value);
    if (!why.empty())
      throw UsageError(fmt::format("{}: {}", config_value_place(key, path, places), why));
  }
}

}  // namespace dplab
