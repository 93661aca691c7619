// The type and range of each option key in the training driver's table (tools/train/config.h),
// checked before a run starts: a value of the wrong type, out of range or not one of a key's
// choices is a UsageError (exit status 2) naming the key, the value and what is expected, with
// "did you mean" for a mistyped choice. The `dplab train` flags take their CLI11 type names
// (INT, FLOAT, ...) and validators from the same rules.
#pragma once
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dplab/core/options.h"

namespace dplab {

class Registry;  // tools/train/registry.h

struct ValueRule {
  enum class Kind { text, integer, number, boolean, choice };
  Kind kind = Kind::text;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;  // max itself is excluded ([min, max))
  // Kind::choice: the accepted values (a function: registries fill at run time).
  std::function<std::vector<std::string>()> choices;
};

// The rule of `key`, or nullptr for a key without one (free text such as out, data, slowdown).
const ValueRule* option_value_rule(const std::string& key);
// CLI11's type name for the key's flag: INT, FLOAT, BOOL, the choices joined by |, or TEXT.
std::string option_type_name(const std::string& key);
// "" when `value` fits the key's rule, else why not: "option batch: expected an integer >= 1,
// got '0'".
std::string check_option_value(const std::string& key, const std::string& value);
// Checks every key `opt` holds that has a rule (without marking it read); throws a UsageError
// for the first that does not fit.
// The values of model, algo, optim and lr.schedule are those of `dplab train`'s registry
// (Registry::with_builtins()).
void check_option_values(const Options& opt);
// The same with the names of `registry` (an experiment's): model, data, algo, optim and
// lr.schedule are checked against its entries, the other keys as above.
void check_option_values(const Options& opt, const Registry& registry);

}  // namespace dplab
