#include "dplab/core/seed_option.h"

namespace dplab {

const OptionTable& seed_option_table() {
  static const OptionTable t({
      {"seed", "0", "seed of weights and data order (a run is a pure function of its config)",
       integer(0)},
  });
  return t;
}

}  // namespace dplab
