// Loading plugins (train/config/plugin.h) into a Registry: `dplab train --plugin LIB.so`, the
// option plugins, and `dplab options --plugin LIB.so`. A plugin stays loaded until the process
// ends (its factories live in it). Every refusal is a UsageError (exit status 2) that names the
// file and the reason: dlopen's message (no such file, not a shared library, an undefined
// symbol), a missing entry point, another ABI version, or a name the registry already has.
#pragma once
#include <string>
#include <vector>

#include "dplab/train/config/registry.h"

namespace dplab {

// Loads the plugin at `path` (dlopen RTLD_NOW | RTLD_LOCAL of its absolute path), checks
// dplab_plugin_abi_version() against DPLAB_PLUGIN_ABI_VERSION, calls dplab_plugin_register on
// `registry` and records the plugin there (Registry::plugins: absolute path, SHA-256). A path
// `registry` already records is not loaded twice.
void load_plugin(const std::string& path, Registry& registry);
// Each of `paths` in order.
void load_plugins(const std::vector<std::string>& paths, Registry& registry);

// The option plugins' value, "a.so,b.so", as paths (empty items dropped).
std::vector<std::string> split_plugin_list(const std::string& list);
// Throws a UsageError when option plugins (`listed`, comma-separated) names a plugin `registry`
// has not loaded: `dplab train` loads them before the run; an experiment binary loads none.
void check_plugins_loaded(const std::string& listed, const Registry& registry);
// The absolute path a plugin is loaded and recorded under.
std::string plugin_path(const std::string& path);

}  // namespace dplab
