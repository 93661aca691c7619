// The type and range of each option key in the training driver's table (train/config/config.h),
// checked before a run starts: a value of the wrong type, out of range or not one of a key's
// choices is a UsageError (exit status 2) naming the key, the value and what is expected, with
// "did you mean" for a mistyped choice. The `dplab train` flags take their CLI11 type names
// (INT, FLOAT, ...) and validators from the same rules.
#pragma once
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "dplab/core/option_decl.h"
#include "dplab/core/options.h"

namespace dplab {

class Registry;  // train/config/registry.h

// The rules are the keys' declarations' (core/option_decl.h ValueRule), gathered in the option
// table (train/config/config.h train_option_specs).
// The rule of `key`, or nullptr for a key without one (free text such as out, data, slowdown).
const ValueRule* option_value_rule(const std::string& key);
// CLI11's type name for the key's flag: INT, FLOAT, BOOL, the choices joined by |, or TEXT.
std::string option_type_name(const std::string& key);
// "" when `value` fits the key's rule, else why not: "option batch: expected an integer >= 1,
// got '0'" (a long value cut short, core/suggest.h quoted).
std::string check_option_value(const std::string& key, const std::string& value);
// What `key` takes, for a value of a type no rule accepts (a TOML date, a table in an array):
// "a number >= 0", "true or false", "f32, bf16 or f16", "a string", and for a key without a rule
// "a string, number, boolean or an array of them".
std::string option_expectation(const std::string& key);
// Checks every key `opt` holds that has a rule (without marking it read); throws a UsageError
// for the first that does not fit.
// The values of model, algo, optim and lr.schedule are those of `dplab train`'s registry
// (Registry::with_builtins()).
void check_option_values(const Options& opt);
// The same with the names of `registry` (an experiment's): model, data, algo, optim and
// lr.schedule are checked against its entries, the other keys as above (registry.cpp).
void check_option_values(const Options& opt, const Registry& registry);
// Checks the values a config file set (`from_file`) that `opt`, composed of the file, flags and
// --set, still holds: the first that does not fit is a UsageError naming the file and, where
// `places` has the key (a TOML file, load_config_file), the value's line and column:
// "job.toml:3:6: option lr: expected a number >= 0, got 'abc'".
void check_config_values(const Options& from_file, const Options& opt, const std::string& path,
                         const std::map<std::string, std::string>* places = nullptr);
// Where a config file's value of `key` was written: places' "FILE:LINE:COL", else `path`.
std::string config_value_place(const std::string& key, const std::string& path,
                               const std::map<std::string, std::string>* places);
// check_option_value and check_config_values with the names of `registry` for model, algo, optim
// and lr.schedule (`dplab train --plugin`: the built-in names and the plugins'; registry.cpp).
std::string check_option_value(const std::string& key, const std::string& value,
                               const Registry& registry);
void check_config_values(const Options& from_file, const Options& opt, const std::string& path,
                         const Registry& registry,
                         const std::map<std::string, std::string>* places = nullptr);

// The names `dplab train` takes for a key its registry fills (model, algo, optim, lr.schedule):
// Registry::with_builtins()'s, built once (builtin_registry.cpp). The fuzz build, which builds no
// models or algorithms, links a fixed list instead (tests/fuzz/builtin_names.cpp).
std::vector<std::string> builtin_names_for(const std::string& key);

}  // namespace dplab
