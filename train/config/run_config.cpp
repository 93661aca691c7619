#include "dplab/train/config/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dplab/core/suggest.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"

namespace dplab {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool usable_scalar(const nlohmann::json& v) {
  return v.is_string() || v.is_boolean() || v.is_number();
}

// What a JSON value of a type dplab cannot use is, for an error: "an object", "an array of
// arrays".
std::string unusable_type(const nlohmann::json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array())
    for (const nlohmann::json& e : v) {
      if (e.is_array()) return "an array of arrays";
      if (!usable_scalar(e)) return "an array holding " + unusable_type(e);
    }
  return v.type_name();  // null, binary
}

// A JSON option value as Options text: integers in decimal, other numbers in shortest
// round-trip form (what run.json's own strings hold), arrays of scalars comma-joined like TOML's.
// Any other type is a usage error in the form of a bad --set value, naming the file.
std::string value_text(const nlohmann::json& v, const std::string& key, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  if (v.is_array() && std::all_of(v.begin(), v.end(), usable_scalar)) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) r += ',';
      r += value_text(v[i], key, path);
    }
    return r;
  }
  throw UsageError(fmt::format("{}: option {}: expected {}, found {}", path, excerpt(key),
                               option_expectation(key), unusable_type(v)));
}

}  // namespace

void load_json_options(std::string_view text, const std::string& path, Options& opt) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not valid JSON at byte offset {}: {}", path, e.byte,
                                 excerpt(e.what(), kExcerptMessageChars)));
  }
  if (!j.is_object() || !j.contains("options"))
    throw UsageError(
        fmt::format("{}: expected a run record (an object with an \"options\" "
                    "object, as dplab train writes to OUT/run.json), found {}",
                    path, j.is_object() ? "no \"options\" key" : j.type_name()));
  const nlohmann::json& o = j["options"];
  if (!o.is_object())
    throw UsageError(
        fmt::format("{}: \"options\": expected an object, found {}", path, o.type_name()));
  for (const auto& [key, entry] : o.items()) {
    if (entry.is_object()) {
      if (!entry.contains("value"))
        throw UsageError(
            fmt::format("{}: option {}: expected a value or an object with "
                        "\"value\", found an object without it",
                        path, excerpt(key)));
      opt.set(key, value_text(entry["value"], key, path));
    } else {
      opt.set(key, value_text(entry, key, path));
    }
  }
}

void load_config_file(const std::string& path, Options& opt,
                      std::map<std::string, std::string>* places) {
  if (!ends_with(path, ".json")) {
    load_toml_options(path, opt, places);
    return;
  }
  load_json_options(read_config_text(path), path, opt);
}

}  // namespace dplab
