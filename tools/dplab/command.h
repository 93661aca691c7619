// The `dplab` command's pieces: each subcommand lives in its own cmd_<name>.cpp and registers
// itself on the CLI11 app through a CommandSpec (commands.cpp lists them); the action it returns
// runs after parsing when that subcommand was chosen.
#pragma once
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/options.h"
#include "dplab/tools/dplab/plugin_args.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"

namespace dplab::cli {

// Runs the chosen subcommand; returns the exit status.
using Action = std::function<int()>;

struct CommandSpec {
  std::string name;
  // Adds the subcommand (and its flags) to `app`; returns the action to run when chosen.
  std::function<Action(CLI::App& app)> add;
};

// Every subcommand, in --help order (commands.cpp).
std::vector<CommandSpec> commands();

// A flag bound to an option key: the value is copied into Options only when given, so a
// config file's value is not overridden by a flag default.
struct Bound {
  std::string key;
  std::string value;
  CLI::Option* opt = nullptr;
};

struct FlagSet {
  std::vector<std::unique_ptr<Bound>> bound;
  CLI::Option* add(CLI::App& app, const std::string& flag, const std::string& key,
                   const std::string& help, const std::string& default_text = "") {
    auto b = std::make_unique<Bound>();
    b->key = key;
    const std::string def = default_text.empty() ? option_default(key) : default_text;
    // Typed, with the option's range or choices (train/config/option_values.h; the names of
    // model, algo, ... those of the command's registry, plugins included): a bad value is
    // refused while parsing, exit status 2.
    b->opt =
        app.add_option(flag, b->value, fmt::format("{} (option {})", help, key))
            ->default_str(def.empty() ? "\"\"" : def)
            ->type_name(option_type_name(key))
            ->check(CLI::Validator([key](std::string& v) { return check_flag_value(key, v); }, ""));
    bound.push_back(std::move(b));
    return bound.back()->opt;
  }
  void apply(Options& o) const {
    for (const auto& b : bound)
      if (b->opt->count() > 0) o.set(b->key, b->value);
  }
};

inline std::string joined(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v) r += (r.empty() ? "" : ", ") + s;
  return r;
}

}  // namespace dplab::cli
