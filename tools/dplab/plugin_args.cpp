#include "dplab/tools/dplab/plugin_args.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include <fmt/format.h>

#include "dplab/core/usage_error.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/plugin_loader.h"
#include "dplab/train/config/run_config.h"
#include "dplab/train/config/sha256.h"
#include "dplab/train/config/usage_agreement.h"

namespace dplab::cli {
namespace {

namespace fs = std::filesystem;

Registry& mutable_registry() {
  static Registry r = Registry::with_builtins();
  return r;
}

// The value of flag `name` at argv[i] ("--name V", then i moves to V, or "--name=V").
bool flag_value(int argc, char** argv, int& i, const std::string& name, std::string& value) {
  const std::string a = argv[i];
  if (a == name && i + 1 < argc) {
    value = argv[++i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Option plugins of a --config file (TOML or a run record); none when the file cannot be read:
// the parse after this reports it.
std::vector<std::string> config_plugins(const std::string& path) {
  Options o;
  try {
    load_config_file(path, o);
  } catch (const std::exception&) {
    return {};
  }
  const auto it = o.values().find("plugins");
  return it == o.values().end() ? std::vector<std::string>{} : split_plugin_list(it->second);
}

// The run record of the run `--resume PATH` continues: PATH/run.json, or for a checkpoint
// directory (PATH/manifest.json) the run directory's two levels up.
fs::path resumed_run_record(const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  const fs::path dir = p.has_filename() ? p : p.parent_path();
  if (fs::exists(dir / "manifest.json")) return dir.parent_path().parent_path() / "run.json";
  return dir / "run.json";
}

// The plugins that record lists ("plugins": [{path, sha256}]); none when it cannot be read:
// the resume itself reports a missing or damaged run.
std::vector<PluginRecord> recorded_plugins(const fs::path& record) {
  std::ifstream in(record);
  if (!in) return {};
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::vector<PluginRecord> r;
  if (!j.is_object() || !j.contains("plugins") || !j["plugins"].is_array()) return r;
  for (const auto& e : j["plugins"])
    if (e.is_object() && e.contains("path") && e["path"].is_string())
      r.push_back({e["path"].get<std::string>(), e.value("sha256", std::string())});
  return r;
}

// Loads the plugins the resumed run used, from the paths it recorded.
void load_recorded(const fs::path& record, Registry& registry) {
  for (const PluginRecord& p : recorded_plugins(record)) {
    try {
      load_plugin(p.path, registry);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{} (the run --resume continues used this plugin: {})", e.what(),
                                   record.string()));
    }
    const std::string now = sha256_file(p.path);
    if (!p.sha256.empty() && now != p.sha256 && reports_usage_errors())
      std::cerr << fmt::format(
          "dplab: warning: plugin {} has changed since the resumed run loaded it (SHA-256 {} "
          "then, {} now); the resumed run may not continue its trajectory\n",
          p.path, p.sha256, now);
  }
}

}  // namespace

void load_command_plugins(int argc, char** argv) {
  if (argc < 2) return;
  const std::string command = argv[1];
  if (command != "train" && command != "options") return;
  Registry& registry = mutable_registry();
  std::vector<std::string> paths;
  for (int i = 2; i < argc; ++i) {
    std::string v;
    if (flag_value(argc, argv, i, "--plugin", v)) {
      paths.push_back(v);
    } else if (command != "train") {
      continue;
    } else if (flag_value(argc, argv, i, "--config", v)) {
      append(paths, config_plugins(v));
    } else if (flag_value(argc, argv, i, "--resume", v)) {
      load_recorded(resumed_run_record(v), registry);  // first: the resumed run's order
    } else if (std::string(argv[i]) == "--set") {
      // --set takes every value up to the next flag.
      for (; i + 1 < argc && argv[i + 1][0] != '-'; ++i)
        if (std::string(argv[i + 1]).rfind("plugins=", 0) == 0)
          append(paths, split_plugin_list(std::string(argv[i + 1]).substr(8)));
    } else if (flag_value(argc, argv, i, "--set", v) && v.rfind("plugins=", 0) == 0) {
      append(paths, split_plugin_list(v.substr(8)));
    }
  }
  load_plugins(paths, registry);
}

const Registry& command_registry() {
  return mutable_registry();
}

std::string loaded_plugin_list() {
  std::string r;
  for (const PluginRecord& p : command_registry().plugins()) r += (r.empty() ? "" : ",") + p.path;
  return r;
}

std::string check_flag_value(const std::string& key, const std::string& value) {
  return check_option_value(key, value, command_registry());
}

}  // namespace dplab::cli
