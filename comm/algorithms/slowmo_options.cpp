// SlowMo's option keys (read by SlowMoOptions::from_options, slowmo.cpp). With slowmo.base = sgp
// the SGP base reads sgp.interval, declared with SGP's keys (sgp_options.cpp).
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& slowmo_option_table() {
  static const OptionTable t({
      {"slowmo.frequency", "48", "tau: local steps between exact averages with slow momentum",
       integer(1)},
      {"slowmo.lr", "1", "alpha: slow learning rate (1 with momentum 0: plain local SGD)",
       number(0)},
      {"slowmo.momentum", "0.5", "beta: slow momentum (0: none)", number(0, 1, true)},
      {"slowmo.base", "local",
       "base algorithm: local (local SGD) or sgp (an SGP gossip every step, sgp.interval "
       "applies; the exact average is the push-sum average)",
       choice({"local", "sgp"})},
      {"slowmo.localsgd_frequency", "3",
       "k: with base local, the workers average their parameters every k base steps of a round "
       "(fairscale's localsgd_frequency; 0: no averaging inside a round)",
       integer(0)},
      // Computed: SlowMoOptions::from_options passes !sgp_base.
      {"slowmo.node_workers", "(true with base local, false with sgp)",
       "true: the ranks of a node (the host's, or --ranks-per-node) average their gradients every "
       "step and form one worker (fairscale's nprocs_per_node); false: every rank is a worker",
       boolean()},
      {"slowmo.round_spans_epochs", "false",
       "true: a round continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the ranks' average); false: every epoch ends with a slow step",
       boolean()},
  });
  return t;
}

}  // namespace dplab
