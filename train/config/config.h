// Training configuration: a TOML file, command-line flags and --set KEY=VALUE, all flattened
// into one dplab::Options ("lr.schedule" = "cosine"). Later sources override earlier ones:
// config file < flags < --set. Keys nobody reads are errors that name them (typos).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dplab/core/option_decl.h"
#include "dplab/core/options.h"

#include "dplab/core/usage_error.h"

namespace dplab {

// dplab::UsageError (core/usage_error.h): unknown keys, malformed --set, unreadable config files.

// One key the training driver reads: its declaration (core/option_decl.h: key, default, help,
// type with range or choices, trajectory or [run]). The `dplab` command's --help and `dplab
// options` print the table (grouped by option_area, train/config/option_keys.h); the value checks
// (train/config/option_values.h), run.json and the resume checks read it.
using OptionSpec = OptionDecl;
// Every key of `dplab train`: the driver's own (config.cpp), then those its parts declare
// beside their readers, gathered by option_keys.cpp (the communicator's, the optimizers', the lr
// schedule's, each algorithm's). The keys whose values name registry entries (model, optim,
// algo, lr.schedule) take the built-in registry's names as their choices.
const std::vector<OptionSpec>& train_option_specs();
// The same as a table to read through: train_option_table().get_int(opt, "epochs") is the value
// set, or the declared default, checked against the key's rule (a UsageError, exit status 2).
const OptionTable& train_option_table();
// The table's default for `key` (throws for a key not in it).
std::string option_default(const std::string& key);

// Bounds on config files (untrusted input as much as data): size, and nesting of tables and
// arrays (dplab's own keys nest 3 deep; toml++ recurses once per level).
constexpr size_t kMaxTomlBytes = size_t(1) << 20;
constexpr int kMaxTomlDepth = 32;
// A config file's text (TOML or a run.json), refused with a UsageError naming the file when it
// cannot be read or exceeds kMaxTomlBytes.
std::string read_config_text(const std::string& path);

// Reads a TOML file into `opt`: nested tables become dotted keys ([lr] schedule = "step" ->
// "lr.schedule"; `value` in a table is the table's own key: [lr] value = 0.1 -> "lr"), arrays
// become comma-separated lists, booleans "true"/"false". Errors name the file, line and column.
// Files over kMaxTomlBytes or nested deeper than kMaxTomlDepth are refused before parsing.
// `places` (optional): where each key's value was written, "FILE:LINE:COL", so that a later
// check of the value (check_config_values) names it as a type error here does.
using ValuePlaces = std::map<std::string, std::string>;
void load_toml_options(const std::string& path, Options& opt, ValuePlaces* places = nullptr);
// The same for TOML text in memory; `path` names it in errors.
void load_toml_string(std::string_view text, const std::string& path, Options& opt,
                      ValuePlaces* places = nullptr);
// Applies one "KEY=VALUE" (from --set); throws, quoting the argument, if there is no '='.
void apply_set_option(const std::string& key_value, Options& opt);
// Throws an error naming the keys that were set but never read, when there are any: the first
// kMaxUnknownListed (long ones cut short, core/suggest.h excerpt) and how many more.
// The message says where the keys are listed: every key `dplab options`, a built-in
// algorithm's `dplab options ALGO`; an algorithm of `registry` that is not built in (an
// experiment's own) has its keys listed in the message itself, which `dplab options` cannot.
constexpr size_t kMaxUnknownListed = 10;
class Registry;
void check_no_unknown_options(const Options& opt, const Registry* registry = nullptr);

// Every key `opt` has been read under that changes the trajectory, with the value read (set or
// defaulted; Options::read_values): the table's keys marked trajectory, and every key read that
// the table does not list (algorithm keys such as daso.B_max, lr.* schedule keys,
// ranks_per_node, link.*) except the communicator's waiting keys (comm.wait, comm.timeout_s,
// comm.backoff_sleep_us), which change timing only. Checkpoints store it; a resume compares it.
std::map<std::string, std::string> trajectory_config(const Options& opt);

}  // namespace dplab
