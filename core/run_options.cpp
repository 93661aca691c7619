#include "dplab/core/run_options.h"

namespace dplab {

const OptionTable& run_option_table() {
  static const OptionTable t({
      {"seed", "0", "seed of weights and data order (a run is a pure function of its config)",
       integer(0)},
      {"epochs", "1",
       "number of epochs; a resume may change it unless something is planned from it (lr.schedule "
       "poly or cosine, DASO's cool-down, hybrid's stages, DC-S3GD's schedule): then "
       "--resume-override epochs, with a warning",
       integer(1), false},
  });
  return t;
}

}  // namespace dplab
