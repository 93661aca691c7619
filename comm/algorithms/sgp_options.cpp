// SGP's option keys (read by SgpStrategy's constructor, sgp.cpp).
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& sgp_option_table() {
  static const OptionTable t({
      {"sgp.interval", "1",
       "communication interval I: gossip every I-th step, local steps between (1: every step)",
       integer(1)},
  });
  return t;
}

}  // namespace dplab
