// `dplab options [PREFIX] [--json] [--plugin LIB.so]...`: every option key of `dplab train` with
// its default and help, grouped by area, then the names the options model, data, algo, optim and
// lr.schedule take (the built-in registry's and the plugins') with their help and keys; PREFIX
// selects keys, areas, names or kinds by prefix (daso, lr., data, algo). A built-in algorithm's
// exact name (post_local_sgd) lists every key that algorithm reads, those of the areas it shares
// too.
#include <algorithm>
#include <iostream>

#include "dplab/core/usage_error.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/dplab/option_help.h"
#include "dplab/tools/dplab/plugin_args.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry_help.h"

namespace dplab::cli {

struct OptionsArgs {
  std::string prefix;
  bool json = false;
  std::vector<std::string> plugins;  // loaded before parsing (plugin_args.h)
};

CommandSpec options_command() {
  return {"options", [](CLI::App& app) -> Action {
            auto a = std::make_shared<OptionsArgs>();
            CLI::App* cmd = app.add_subcommand(
                "options",
                "list the option keys of dplab train (config files, --set KEY=VALUE) with "
                "defaults and help, by area");
            cmd->add_option("PREFIX", a->prefix,
                            "only keys or areas starting with this (daso, lr., data, comm)");
            cmd->add_flag("--json", a->json,
                          "a JSON array of {key, default, help, area, trajectory}");
            cmd->add_option("--plugin", a->plugins,
                            "LIB.so: list a plugin's names and keys too (repeatable; loaded "
                            "before parsing, tools/dplab/plugin_args.h)");
            return [a]() {
              if (a->json) {
                std::cout << option_reference_json(a->prefix);
                return 0;
              }
              // A built-in algorithm's exact name: every key it reads (its own area's and those
              // it shares), then its entry. The hint of an unknown-key error points here.
              const Registry& builtins = command_registry();  // and the plugins'
              for (const StrategyEntry& e : builtins.strategies()) {
                if (e.name != a->prefix) continue;
                std::string keys = algorithm_option_reference(e.name);
                // A plugin's algorithm: the keys its entry names (none are in the table).
                const std::vector<std::string> builtin = builtin_names_for("algo");
                if (std::find(builtin.begin(), builtin.end(), e.name) == builtin.end())
                  for (const std::string& k : e.keys) keys += fmt::format("  {}\n", k);
                Registry one;
                one.add(e);
                std::cout << (keys.empty()
                                  ? fmt::format("algorithm {} reads no option keys of its own "
                                                "(the driver's: dplab options)\n",
                                                e.name)
                                  : fmt::format("algorithm {} reads these option keys (with the "
                                                "driver's: dplab options):\n\n{}",
                                                e.name, keys))
                          << "\nNames:\n\n"
                          << registry_reference(one);
                return 0;
              }
              // The keys, then the names of models, datasets, algorithms, optimizers and
              // schedules (with their help and keys) that the prefix selects.
              std::string text = option_reference(a->prefix);
              const std::string names = registry_reference(builtins, a->prefix);
              if (!names.empty())
                text += (text.empty() ? "" : "\n") + std::string("Names:\n\n") + names;
              if (text.empty())
                throw UsageError(fmt::format(
                    "no option key, area or built-in name starts with '{}' (an experiment "
                    "binary's own algorithm, model or data set: that binary's --help lists it "
                    "with its keys)",
                    a->prefix));
              std::cout << text;
              return 0;
            };
          }};
}

}  // namespace dplab::cli
