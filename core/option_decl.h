// One option key's declaration, written once beside the code that reads it: the key, its
// default, a line of help, its type with the range or the choices it takes, and whether it plans
// the trajectory (a resumed run must keep it) or is a [run] option (where output goes, how it
// is reported). A component lists its keys in an OptionTable and reads them through it, so the
// default and the checks exist in one place; the training driver gathers the tables into the
// option table of `dplab train --help`, `dplab options`, docs/options.md and run.json
// (train/config/config.h).
//
//   const OptionTable& table() {
//     static const OptionTable t({{"diloco.H", "50", "inner steps per round", integer(1)}});
//     return t;
//   }
//   o.H = table().get_int(opt, "diloco.H");  // 50 when unset; "0" is a UsageError
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dplab/core/options.h"

namespace dplab {

// What values a key takes.
struct ValueRule {
  enum class Kind { text, integer, number, boolean, choice };
  Kind kind = Kind::text;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;  // max itself is excluded ([min, max))
  // Kind::choice: the accepted values (a function: registries fill at run time).
  std::function<std::vector<std::string>()> choices;
};

// Rules: only limits a run would refuse anyway (or cannot mean); a rule never forbids a setting
// the code accepts.
ValueRule text();
ValueRule integer(double min = -std::numeric_limits<double>::infinity(),
                  double max = std::numeric_limits<double>::infinity());
ValueRule number(double min = -std::numeric_limits<double>::infinity(),
                 double max = std::numeric_limits<double>::infinity(), bool max_open = false);
ValueRule boolean();
ValueRule choice(std::vector<std::string> values);
ValueRule choice(std::function<std::vector<std::string>()> values);

struct OptionDecl {
  std::string key;
  std::string default_value;  // as text: what a reader gets when the key is unset
  std::string help;
  ValueRule rule;
  // false for keys that cannot change what a run computes (where it writes, how it reports,
  // how long it runs, thread counts, evaluation): a resumed run may change them freely.
  bool trajectory = true;
};

// "" when `value` fits `rule`, else why not, in the one form every option error takes:
// "option batch: expected an integer >= 1, got '0'" (a long value cut short, core/suggest.h).
std::string check_value(const std::string& key, const ValueRule& rule, const std::string& value);
// What `rule` takes: "an integer >= 1", "a number in [0, 1)", "true or false", "f32, bf16 or
// f16", "a string".
std::string rule_expectation(const ValueRule& rule);
// "" when `value` is one of `names`, else "option algo: unknown value 'dasso' (did you mean
// 'daso'?); expected local, allreduce or daso".
std::string check_choice(const std::string& key, const std::string& value,
                         const std::vector<std::string>& names);

// A component's keys, read through their declarations: a get_* returns the key's value, or the
// declared default when unset, after checking it against the key's rule (a UsageError, exit
// status 2, in check_value's form). Reading a key the table does not declare is a bug (Error).
class OptionTable {
 public:
  explicit OptionTable(std::vector<OptionDecl> decls);
  const std::vector<OptionDecl>& decls() const { return decls_; }
  const OptionDecl& at(const std::string& key) const;
  int64_t get_int(const Options& opt, const std::string& key) const;
  double get_double(const Options& opt, const std::string& key) const;
  bool get_bool(const Options& opt, const std::string& key) const;
  std::string get_string(const Options& opt, const std::string& key) const;
  // A choice key's value as the enum whose enumerators are its choices in the declared order
  // (as default_choice below).
  template <class Enum>
  Enum get_choice(const Options& opt, const std::string& key) const {
    return static_cast<Enum>(choice_index(key, get_string(opt, key)));
  }
  // For a key whose default is computed (declared as text such as "(seed)"): the reader's.
  int64_t get_int(const Options& opt, const std::string& key, int64_t computed_default) const;
  double get_double(const Options& opt, const std::string& key, double computed_default) const;
  bool get_bool(const Options& opt, const std::string& key, bool computed_default) const;
  // Every declaration of `other` after this table's (a component's keys read by another:
  // GradSync's under an algorithm's prefix).
  OptionTable with(const OptionTable& other) const;
  // The same declarations with `prefix` before each key and `what` + ": " before each help.
  OptionTable prefixed(const std::string& prefix, const std::string& what) const;
  // The declared default of `key` as a value: for a struct member's initializer, so that a
  // struct built in code starts where an unset option does, from the same declaration.
  int64_t default_int(const std::string& key) const;
  double default_double(const std::string& key) const;
  bool default_bool(const std::string& key) const;
  const std::string& default_string(const std::string& key) const;
  // The declared default of a choice key as the enum whose enumerators are its choices, in the
  // declared order (enum class Norm { per_tensor, global } for choice({"per_tensor", "global"})).
  template <class Enum>
  Enum default_choice(const std::string& key) const {
    return static_cast<Enum>(default_choice_index(key));
  }
  // The position of the declared default among the key's choices.
  int default_choice_index(const std::string& key) const;
  // The position of `value` among choice key `key`'s choices.
  int choice_index(const std::string& key, const std::string& value) const;

 private:
  // The key's set value checked against its rule (nothing when unset).
  void check(const Options& opt, const OptionDecl& d) const;
  std::vector<OptionDecl> decls_;
};

}  // namespace dplab
