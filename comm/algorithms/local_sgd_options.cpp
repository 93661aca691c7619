// Local SGD's and post-local SGD's option keys (read by LocalSgdStrategy, local_sgd.cpp).
// Post-local SGD reads both tables; plain local SGD only local_sgd_option_table().
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& local_sgd_option_table() {
  static const OptionTable t({
      {"local_sgd.H", "4", "local steps between parameter averages", integer(1)},
      {"local_sgd.round_spans_epochs", "false",
       "true: a period continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the ranks' average); false: every epoch ends with an average",
       boolean()},
  });
  return t;
}

const OptionTable& post_local_sgd_option_table() {
  static const OptionTable t({
      {"post_local_sgd.switch_epoch", "1",
       "epochs of allreduce SGD before local SGD (at or after epochs: a warning, the local phase "
       "never starts)",
       integer(0)},
  });
  return t;
}

}  // namespace dplab
