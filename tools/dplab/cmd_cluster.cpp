// `dplab cluster list` and `dplab cluster show PRESET|FILE`: the virtual cluster's platforms
// (comm/cluster/, docs/virtual_cluster.md).
#include <iostream>

#include "dplab/comm/cluster/platform_text.h"
#include "dplab/comm/cluster/presets.h"
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {

struct ClusterArgs {
  std::string target;
};

CommandSpec cluster_command() {
  return {"cluster", [](CLI::App& app) -> Action {
            auto a = std::make_shared<ClusterArgs>();
            CLI::App* cmd = app.add_subcommand(
                "cluster",
                "the virtual cluster's platforms: list the presets, show one or a "
                "cluster file (docs/virtual_cluster.md)");
            cmd->require_subcommand(1);
            CLI::App* list = cmd->add_subcommand("list", "the preset platforms, one per line");
            CLI::App* show = cmd->add_subcommand(
                "show", "a platform's links, sources and the model's allreduce times");
            show->add_option("PRESET|FILE", a->target, "a preset name or a TOML cluster file")
                ->required();
            return [a, list, show]() {
              if (list->parsed()) {
                for (const auto& p : cluster::presets())
                  std::cout << cluster::platform_summary(p) << "\n";
                return 0;
              }
              if (show->parsed()) {
                std::cout << cluster::platform_details(cluster::resolve_platform(a->target));
                return 0;
              }
              return 2;
            };
          }};
}

}  // namespace dplab::cli
