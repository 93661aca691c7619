#include "dplab/comm/algorithms/algorithm_options.h"

#include "dplab/comm/grad_sync_options.h"

namespace dplab {

const std::vector<AlgorithmOptions>& builtin_algorithm_options() {
  // GradSync's keys under each prefix that reads them (comm/grad_sync_options.h).
  static const std::vector<AlgorithmOptions> all = [] {
    const OptionTable allreduce_sync =
        grad_sync_option_table("allreduce.", "allreduce (and post_local_sgd's first phase)");
    return std::vector<AlgorithmOptions>{
        {"allreduce", allreduce_option_table().with(allreduce_sync)},
        {"hybrid", hybrid_option_table().with(grad_sync_option_table("hybrid.", "hybrid"))},
        {"daso",
         daso_option_table().with(grad_sync_option_table("daso.local.", "daso: node-local syncs"))},
        {"dcs3gd", dcs3gd_option_table()},
        {"crossover", crossover_option_table().with(grad_sync_option_table(
                          "crossover.sync.", "crossover.hierarchical: the group allreduce"))},
        {"sgp", sgp_option_table()},
        {"oscars", oscars_option_table()},
        {"local_sgd", local_sgd_option_table().with(allreduce_sync)},
        {"post_local_sgd",
         post_local_sgd_option_table().with(local_sgd_option_table()).with(allreduce_sync)},
        {"diloco", diloco_option_table()},
        {"slowmo", slowmo_option_table()},
        {"streaming_diloco", streaming_diloco_option_table()},
    };
  }();
  return all;
}

}  // namespace dplab
