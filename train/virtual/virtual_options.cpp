#include "dplab/train/virtual/virtual_options.h"

namespace dplab {

const OptionTable& virtual_run_option_table() {
  static const OptionTable t({
      {"cluster.data_rate", "0",
       "virtual cluster: samples/s one rank's loader delivers in virtual time: batch k of an "
       "epoch is ready at max(when asked, batch k-1's + batch/rate), the first at the epoch's "
       "start + batch/rate (0: loading is hidden by prefetch)",
       number(0)},
      {"cluster.failure_data", "reassign",
       "virtual cluster with fail events, an algorithm going on with the live ranks: reassign "
       "(at each step the down ranks' batches are split among the live ranks, which train on "
       "their own batch and their share: every sample is seen, their compute grows) or drop "
       "(the down ranks' batches are not seen); docs/virtual_cluster.md, \"Failures\"",
       choice({"reassign", "drop"})},
  });
  return t;
}

}  // namespace dplab
