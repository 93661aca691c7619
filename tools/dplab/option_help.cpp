#include "dplab/tools/dplab/option_help.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "dplab/tools/dplab/plugin_args.h"
#include "dplab/train/config/option_keys.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry_help.h"

namespace dplab::cli {
namespace {

bool selected(const OptionSpec& s, const std::string& prefix) {
  return prefix.empty() || s.key.rfind(prefix, 0) == 0 || option_area(s.key).rfind(prefix, 0) == 0;
}

std::string key_line(const OptionSpec& s) {
  return fmt::format("  {:<28} {} [default: {}]{}\n", s.key, s.help,
                     s.default_value.empty() ? "\"\"" : s.default_value,
                     s.trajectory ? "" : " [run]");
}

}  // namespace

std::string option_reference(const std::string& prefix, const std::string& algo) {
  std::string r;
  bool left_out = false;
  for (const std::string& area : option_areas()) {
    if (!algo.empty() && is_algorithm_area(area) && !algorithm_reads_area(algo, area)) {
      left_out = true;
      continue;
    }
    std::string lines;
    for (const OptionSpec& s : train_option_specs()) {
      if (option_area(s.key) != area || !selected(s, prefix)) continue;
      lines += key_line(s);
    }
    if (!lines.empty()) r += fmt::format("{}{}:\n{}", r.empty() ? "" : "\n", area, lines);
  }
  if (left_out)
    r += fmt::format(
        "\n(the other algorithms' keys: dplab options ALGO, or dplab train --algo ALGO --help)\n");
  return r;
}

std::string algorithm_option_reference(const std::string& algo) {
  const std::vector<std::string> keys = algorithm_option_keys(algo);
  std::string r;
  for (const std::string& area : option_areas()) {
    std::string lines;
    for (const OptionSpec& s : train_option_specs())
      if (option_area(s.key) == area && std::find(keys.begin(), keys.end(), s.key) != keys.end())
        lines += key_line(s);
    if (!lines.empty()) r += fmt::format("{}{}:\n{}", r.empty() ? "" : "\n", area, lines);
  }
  return r;
}

std::string option_reference_json(const std::string& prefix) {
  nlohmann::json a = nlohmann::json::array();
  for (const OptionSpec& s : train_option_specs())
    if (selected(s, prefix))
      a.push_back({{"key", s.key},
                   {"default", s.default_value},
                   {"help", s.help},
                   {"area", option_area(s.key)},
                   {"trajectory", s.trajectory}});
  return a.dump(1) + "\n";
}

void focus_train_help(CLI::App& app, int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "train") return;
  std::string algo;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--algo" && i + 1 < argc) algo = argv[i + 1];
    if (a.rfind("--algo=", 0) == 0) algo = a.substr(7);
  }
  CLI::App* train = nullptr;
  for (CLI::App* s : app.get_subcommands({}))
    if (s->get_name() == "train") train = s;
  if (algo.empty() || !train) return;
  std::string text = fmt::format(
      "Option keys of a run with algo = {} (for --config files and --set "
      "KEY=VALUE):\n{}",
      algo, option_reference("", algo));
  // A plugin's algorithm (not built in): its entry, with the keys it reads.
  const std::vector<std::string> builtin = builtin_names_for("algo");
  for (const StrategyEntry& e : command_registry().strategies()) {
    if (e.name != algo || std::find(builtin.begin(), builtin.end(), algo) != builtin.end())
      continue;
    Registry one;
    one.add(e);
    text += "\nThe plugin's algorithm:\n\n" + registry_reference(one);
  }
  train->footer(text);
}

}  // namespace dplab::cli
