#include "dplab/train/config/config.h"

#include "dplab/train/config/compress_refusal.h"

#include <fmt/format.h>

// toml++ 3.3 asserts on some malformed input rather than reporting it (see toml_nesting.h);
// without the assert it reports those as parse errors. Builds without NDEBUG must not abort on
// a bad config file, so its asserts are off here as they are in release builds.
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "dplab/comm/comm_options.h"
#include "dplab/comm/registry.h"
#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/train/config/option_keys.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/config/toml_nesting.h"

namespace dplab {

namespace {

// The keys whose values name registry entries (train/config/registry.h), declared as text: in
// the table their choices are the names `dplab train` takes (builtin_names_for); a run checks
// them against its own registry (check_option_values(opt, registry)).
bool names_registry_entry(const std::string& key) {
  return key == "model" || key == "optim" || key == "algo" || key == "lr.schedule";
}
ValueRule registry_names(const std::string& key) {
  return choice([key] { return builtin_names_for(key); });
}

// The loop's settings, read by train_settings.cpp (and the optimizer's shared keys by
// train/loop/optimizer_options.cpp, the model's by train/loop/model_parts.cpp, plugins by
// plugin_loader.cpp); component_option_specs() (option_keys.cpp) adds every other part's.
const std::vector<OptionSpec>& driver_option_specs() {
  static const std::vector<OptionSpec> specs = {
      {"model", "mnist_cnn", "model name (models/registry.h)", text()},
      {"model.zero_init_residual", "false",
       "resnets: zero each residual block's last BatchNorm gamma (Goyal et al.)", boolean()},
      {"batch", "64", "batch size per rank", integer(1)},
      {"lr", "0.01",
       "base learning rate (scaled by the lr.* schedule); unset with optim = adamw: 0.001 "
       "(PyTorch's AdamW default)",
       number(0)},
      {"momentum", "0.9", "SGD momentum", number(0)},
      {"nesterov", "false", "Nesterov momentum", boolean()},
      {"dampening", "0", "SGD dampening", number(0)},
      {"wd", "0", "weight decay; unset with optim = adamw: 0.01 (PyTorch's AdamW default)",
       number(0)},
      {"optim", "sgd",
       "optimizer: sgd, lars (optim/lars.h; reads lr, momentum, wd) or adamw (optim/adamw.h; "
       "reads lr, wd, adamw.*; PyTorch's defaults are --lr 0.001 --wd 0.01)",
       text()},
      {"accumulate_steps", "1",
       "sum the gradients of this many batches before each optimizer step (loss / k)", integer(1)},
      {"label_smoothing", "0", "cross-entropy label smoothing", number(0, 1)},
      {"amp", "off",
       "mixed precision: off, bf16 (conv/linear on bf16 operands with f32 weights and "
       "accumulation; on the CPU activations stay bf16 from layer to layer; core/autocast.h) or "
       "f16 (conv/linear on f16-rounded operands plus dynamic loss scaling; "
       "optim/grad_scaler.h)",
       choice({"off", "bf16", "f16"})},
      {"threads", "0",
       "OpenMP threads for the ops (0: all cores; under a virtual cluster 1, and more is an "
       "error)",
       integer(0), false},
      {"max_steps", "0", "stop after this many optimizer steps (0: no limit)", integer(0), false},
      {"plugins", "",
       "shared libraries whose models, datasets, algorithms, optimizers and schedules dplab "
       "train loads before the run (comma-separated paths, or a TOML array; flag --plugin; "
       "docs/extension_api.md); run.json records each with its SHA-256, and --resume loads "
       "them again",
       text(), false},
      {"nonfinite", "stop",
       "an inf/NaN loss or gradient: the step is never applied; stop (every rank, exit status "
       "3, no checkpoint written) or skip (go on, count it: nonfinite_skipped_steps); a "
       "checkpoint with an inf/NaN is never written (train/loop/nonfinite_guard.h)",
       choice({"stop", "skip"})},
      {"nonfinite_check", "auto",
       "when the host reads a step's inf/NaN check: every_step (at once: one host "
       "synchronisation per step on a GPU), next_step (a step later, so a GPU never waits for "
       "the host; the message cannot name the tensor; with nonfinite = stop the failing step's "
       "update is applied before the run stops and nothing is written, with skip the device "
       "drops the step itself and the run equals every_step's) or auto (next_step on a CUDA "
       "device with amp other than f16, else every_step; train/loop/nonfinite_guard.h)",
       choice({"auto", "every_step", "next_step"})},
  };
  return specs;
}

}  // namespace

const std::vector<OptionSpec>& train_option_specs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> all = driver_option_specs();
    for (const OptionSpec& s : component_option_specs()) all.push_back(s);
    for (OptionSpec& s : all)
      if (names_registry_entry(s.key)) s.rule = registry_names(s.key);
    return all;
  }();
  return specs;
}

const OptionTable& train_option_table() {
  // Reads leave the names of registry entries to the registry a run resolves them in (an
  // experiment's has its own): those keys are read as text.
  static const OptionTable t = [] {
    std::vector<OptionSpec> specs = train_option_specs();
    for (OptionSpec& s : specs)
      if (names_registry_entry(s.key)) s.rule = text();
    return OptionTable(std::move(specs));
  }();
  return t;
}

std::string option_default(const std::string& key) {
  for (const auto& s : train_option_specs())
    if (s.key == key) return s.default_value;
  DPLAB_FAIL("no default for option '{}'", key);
}

namespace {

bool usable_scalar(const toml::node& n) {
  return n.is_string() || n.is_integer() || n.is_floating_point() || n.is_boolean();
}

// What a node of a type dplab cannot use is, for an error: "a date", "an array of tables".
std::string unusable_type(const toml::node& n) {
  if (n.is_date()) return "a date";
  if (n.is_time()) return "a time";
  if (n.is_date_time()) return "a date-time";
  if (n.is_table()) return "a table";
  if (n.is_array_of_tables()) return "an array of tables";
  if (auto a = n.as_array())
    for (const toml::node& e : *a) {
      if (e.is_array()) return "an array of arrays";
      if (!usable_scalar(e)) return "an array holding " + unusable_type(e);
    }
  return "a value of another type";
}

// A value as Options text: strings, numbers, booleans and arrays of them (comma-joined). Any
// other type (a date or time, a table or an array inside an array) is a usage error in the form
// of a bad --set value, naming the file, line and column.
std::string node_to_string(const toml::node& n, const std::string& key, const std::string& path) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto a = n.as_array(); a && std::all_of(a->begin(), a->end(), usable_scalar)) {
    std::string r;
    for (size_t i = 0; i < a->size(); ++i) {
      if (i) r += ',';  // appended in place: GCC 12 misreads const char* + string&& (-Wrestrict)
      r += node_to_string(*a->get(i), key, path);
    }
    return r;
  }
  throw UsageError(fmt::format("{}:{}:{}: option {}: expected {}, found {}", path,
                               n.source().begin.line, n.source().begin.column, excerpt(key),
                               option_expectation(key), unusable_type(n)));
}

// The byte at `offset` for an error message: 'c', a named control character or the end.
std::string describe_byte(std::string_view text, size_t offset) {
  if (offset >= text.size()) return "the end of the file";
  const unsigned char c = static_cast<unsigned char>(text[offset]);
  if (c == '\n' || c == '\r') return "the end of the line";
  if (c < 0x20 || c >= 0x7f) return fmt::format("byte 0x{:02x}", c);
  return fmt::format("'{}'", char(c));
}

void flatten(const toml::table& t, const std::string& prefix, const std::string& path, Options& opt,
             ValuePlaces* places) {
  for (auto&& [k, v] : t) {
    // TOML cannot give a key both a value and sub-keys (lr = 0.1 and [lr] schedule = ...), so
    // inside a table `value` names the table's own key: [lr] value = 0.1 -> "lr".
    const std::string name(k.str());
    const std::string key =
        prefix.empty() ? name : (name == "value" ? prefix : prefix + "." + name);
    if (auto sub = v.as_table()) {
      flatten(*sub, key, path, opt, places);
    } else {
      opt.set(key, node_to_string(v, key, path));
      if (places)
        (*places)[key] =
            fmt::format("{}:{}:{}", path, v.source().begin.line, v.source().begin.column);
    }
  }
}

}  // namespace

std::map<std::string, std::string> trajectory_config(const Options& opt) {
  std::map<std::string, bool> table;
  for (const auto& s : train_option_specs()) table[s.key] = s.trajectory;
  std::map<std::string, std::string> r;
  for (const auto& [k, v] : opt.read_values()) {
    if (auto it = table.find(k); it != table.end() && !it->second) continue;
    if (k == "comm.wait" || k == "comm.timeout_s" || k == "comm.backoff_sleep_us") continue;
    r[k] = v;
  }
  return r;
}

void load_toml_string(std::string_view text, const std::string& path, Options& opt,
                      ValuePlaces* places) {
  if (text.size() > kMaxTomlBytes)
    throw UsageError(fmt::format("{}: config of {} bytes exceeds the limit of {} bytes", path,
                                 text.size(), kMaxTomlBytes));
  const TomlNesting nesting = toml_nesting(text, kMaxTomlDepth);
  if (nesting.malformed)
    throw UsageError(fmt::format("{}:{}:{}: expected {}, found {}", path, nesting.bad_line,
                                 nesting.bad_column, nesting.expected,
                                 describe_byte(text, nesting.bad_offset)));
  if (nesting.exceeded)
    throw UsageError(fmt::format(
        "{}:{}:{}: tables and arrays nested {} deep exceed the limit of {} (a dotted key or "
        "[table] header of that many parts, or arrays and inline tables inside each other)",
        path, nesting.line, nesting.column, nesting.depth, kMaxTomlDepth));
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw UsageError(fmt::format("{}:{}:{}: {}", path, e.source().begin.line,
                                 e.source().begin.column,
                                 excerpt(e.description(), kExcerptMessageChars)));
  }
  flatten(t, "", path, opt, places);
}

std::string read_config_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw UsageError(fmt::format("{}: cannot open the config file", path));
  // Read one byte past the limit, no more: a huge file is refused without being held.
  std::string text;
  text.resize(kMaxTomlBytes + 1);
  in.read(text.data(), std::streamsize(text.size()));
  if (in.bad()) throw UsageError(fmt::format("{}: read error", path));
  text.resize(size_t(in.gcount()));
  if (text.size() > kMaxTomlBytes)
    throw UsageError(
        fmt::format("{}: config file exceeds the limit of {} bytes", path, kMaxTomlBytes));
  return text;
}

void load_toml_options(const std::string& path, Options& opt, ValuePlaces* places) {
  load_toml_string(read_config_text(path), path, opt, places);
}

void apply_set_option(const std::string& key_value, Options& opt) {
  const auto eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--set '{}': expected KEY=VALUE", key_value));
  opt.set(key_value.substr(0, eq), key_value.substr(eq + 1));
}

namespace {

// Where the unknown-key message sends the user for algorithm `algo`'s keys.
std::string algorithm_keys_hint(const std::string& algo, const Registry* registry) {
  const std::vector<std::string> builtin = builtin_names_for("algo");
  if (std::find(builtin.begin(), builtin.end(), algo) != builtin.end())
    return fmt::format("every key: dplab options, algorithm {}'s: dplab options {}", excerpt(algo),
                       excerpt(algo));
  if (registry != nullptr)
    for (const StrategyEntry& e : registry->strategies()) {
      if (e.name != algo) continue;
      // Not built in: dplab options does not know it; its keys are the registry entry's.
      std::string keys;
      for (size_t i = 0; i < std::min(e.keys.size(), kMaxUnknownListed); ++i)
        keys += (keys.empty() ? "" : ", ") + excerpt(e.keys[i]);
      if (e.keys.size() > kMaxUnknownListed)
        keys += fmt::format(" and {} more", count_text(e.keys.size() - kMaxUnknownListed));
      return fmt::format(
          "algorithm {} is this program's own and reads {} (its --help lists every name's "
          "keys); the driver's keys: dplab options",
          quoted_excerpt(algo), keys.empty() ? "no keys of its own" : keys);
    }
  return "every key: dplab options";
}

}  // namespace

void check_no_unknown_options(const Options& opt, const Registry* registry) {
  const auto unused = opt.unused_keys();
  if (unused.empty()) return;
  // Candidates for "did you mean": the table's keys and every key this run read (an
  // algorithm's, a schedule's).
  std::vector<std::string> known;
  for (const auto& s : train_option_specs()) known.push_back(s.key);
  for (const auto& [k, v] : opt.read_values()) known.push_back(k);
  // The first kMaxUnknownListed keys, each cut to an excerpt, and how many more: the message
  // stays short however many keys a file has.
  std::string list;
  for (size_t i = 0; i < std::min(unused.size(), kMaxUnknownListed); ++i) {
    const std::string& k = unused[i];
    // A key of the table that this run does not read (another algorithm's, link.* without a
    // distributed algorithm): named as such, not "did you mean" itself.
    const bool listed = std::find(known.begin(), known.end(), k) != known.end();
    list += (list.empty() ? "" : ", ") + excerpt(k) +
            (listed ? fmt::format(" (an option of area {}, not read by this run)", option_area(k))
                    : did_you_mean(k, known));
  }
  if (unused.size() > kMaxUnknownListed)
    list += fmt::format(" and {} more", count_text(unused.size() - kMaxUnknownListed));
  // A compression key says why (train/config/compress_refusal.h).
  const std::string algo = communicator_option_table().get_string(opt, "algo");
  std::string exchanges;  // the algorithm's declaration (StrategyEntry::exchanges)
  if (registry != nullptr)
    for (const StrategyEntry& e : registry->strategies())
      if (e.name == algo) exchanges = e.exchanges;
  std::string why;
  for (const auto& k : unused)
    if (why.empty()) why = compression_refusal(k, algo, exchanges);
  throw UsageError(fmt::format(
      "unknown option{} {} (not used by the model, data, optimizer, schedule or algorithm "
      "{}; {}){}",
      unused.size() > 1 ? "s" : "", list, quoted_excerpt(algo), algorithm_keys_hint(algo, registry),
      why.empty() ? "" : ". " + why));
}

}  // namespace dplab
