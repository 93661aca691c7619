// Crossover-SGD's own option keys (read by CrossoverOptions::from_options, crossover.cpp);
// GradSync's keys of the group allreduce, under "crossover.sync.", are
// comm/grad_sync_options.cpp's.
#include <limits>

#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& crossover_option_table() {
  static const OptionTable t({
      // Checked against the model's parameter names by plan_gossip_segments (crossover.h).
      {"crossover.segments", "blocks",
       "how the parameters are cut: blocks, layers, tensors, model or \"p1,p2|p3|...\" groups "
       "of name prefixes",
       text()},
      {"crossover.sampler", "balanced", "derangement sampler: balanced (the paper's) or uniform",
       choice({"balanced", "uniform"})},
      {"crossover.interval", "1", "communication interval: micro-batches per step", integer(1)},
      {"crossover.hierarchical", "false",
       "gradient allreduce inside a node's group, gossip among group leaders", boolean()},
      // The default is the run's seed (option seed), passed by the reader.
      {"crossover.seed", "(seed)", "seed of the shared topology stream (default: seed)",
       integer(-std::numeric_limits<double>::infinity())},
      {"crossover.check_maps", "false", "allgather every drawn map and fail if ranks disagree",
       boolean()},
  });
  return t;
}

}  // namespace dplab
