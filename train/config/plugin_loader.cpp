#include "dplab/train/config/plugin_loader.h"

#include <dlfcn.h>

#include <exception>
#include <filesystem>

#include <fmt/format.h>

#include "dplab/core/usage_error.h"
#include "dplab/train/config/plugin.h"
#include "dplab/train/config/sha256.h"

namespace dplab {
namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("plugin {}: {}", path, why));
}

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// The entry point `name` of `handle`, or a refusal naming it.
void* entry_point(void* handle, const std::string& path, const char* name) {
  dlerror();  // clear
  void* sym = dlsym(handle, name);
  if (sym == nullptr)
    refuse(path, fmt::format("no entry point {} (a dplab plugin defines it with extern \"C\"; "
                             "train/config/plugin.h): {}",
                             name, dl_error()));
  return sym;
}

}  // namespace

std::string plugin_path(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

void load_plugin(const std::string& given, Registry& registry) {
  const std::string path = plugin_path(given);
  for (const PluginRecord& p : registry.plugins())
    if (p.path == path) return;
  // An absolute path: dlopen does not search the library path for it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) refuse(path, "cannot be loaded: " + dl_error());
  using AbiFn = int (*)();
  using RegisterFn = void (*)(Registry&);
  const auto abi = reinterpret_cast<AbiFn>(entry_point(handle, path, DPLAB_PLUGIN_ABI_SYMBOL));
  const auto add =
      reinterpret_cast<RegisterFn>(entry_point(handle, path, DPLAB_PLUGIN_REGISTER_SYMBOL));
  const int version = abi();
  if (version != DPLAB_PLUGIN_ABI_VERSION)
    refuse(path, fmt::format("plugin ABI version {}, but this dplab loads version {} only "
                             "(rebuild the plugin against this dplab)",
                             version, DPLAB_PLUGIN_ABI_VERSION));
  try {
    add(registry);
  } catch (const std::exception& e) {
    refuse(path, fmt::format("its registration failed: {}", e.what()));
  }
  // Never dlclose'd: the registry's factories are the plugin's code.
  registry.add_plugin_record({path, sha256_file(path)});
}

void load_plugins(const std::vector<std::string>& paths, Registry& registry) {
  for (const std::string& p : paths) load_plugin(p, registry);
}

void check_plugins_loaded(const std::string& listed, const Registry& registry) {
  for (const std::string& p : split_plugin_list(listed)) {
    bool loaded = false;
    for (const PluginRecord& r : registry.plugins()) loaded = loaded || r.path == plugin_path(p);
    if (!loaded)
      throw UsageError(fmt::format(
          "option plugins: plugin {} is not loaded (dplab train loads the plugins of option "
          "plugins and --plugin before the run; an experiment binary registers its names itself)",
          p));
  }
}

std::vector<std::string> split_plugin_list(const std::string& list) {
  std::vector<std::string> r;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) r.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return r;
}

}  // namespace dplab
