// The `dplab` command's registry: the built-in names and those of the plugins its command line
// asks for (train/config/plugin_loader.h). The plugins are loaded before CLI11 parses the command
// line, because the flags' value checks (--algo NAME), `dplab train --help` and `dplab options`
// list and accept the plugins' names. `dplab train` loads the plugins of --plugin LIB (any
// number), of option plugins in --config FILE and --set plugins=..., and those the run that
// --resume DIR continues recorded in DIR/run.json; `dplab options` those of --plugin.
#pragma once
#include <string>

#include "dplab/train/config/registry.h"

namespace dplab::cli {

// Loads the plugins `argv` asks for into command_registry(); a bad one is a UsageError naming
// the file and the reason (exit status 2). A recorded plugin whose file changed since (another
// SHA-256) is loaded with a warning on stderr.
void load_command_plugins(int argc, char** argv);

// Registry::with_builtins() and the plugins load_command_plugins loaded.
const Registry& command_registry();

// The option plugins' value for the plugins loaded: their absolute paths, comma-joined ("" for
// none).
std::string loaded_plugin_list();

// check_option_value against command_registry(): the flags' value check.
std::string check_flag_value(const std::string& key, const std::string& value);

}  // namespace dplab::cli
