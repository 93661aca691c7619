// AllReduce-SGD's own option keys (read by AllReduceStrategy's constructor, allreduce.cpp);
// GradSync's keys under "allreduce." are comm/grad_sync_options.cpp's.
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& allreduce_option_table() {
  static const OptionTable t({
      {"allreduce.ft", "none",
       "allreduce on a virtual cluster with fail events: none (a failure stops the job) or "
       "quorum (go on with the live ranks, the gradient averaged over them, as torchft's "
       "fault-tolerant DDP; a returning rank is healed from a live peer; "
       "docs/virtual_cluster.md, \"Failures\")",
       choice({"none", "quorum"})},
  });
  return t;
}

}  // namespace dplab
