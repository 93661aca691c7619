// The communicator's option keys: virtual nodes, the link shorthand, the virtual cluster
// (comm/cluster/cluster_option.h) and how MPI waits (comm/communicator.h WaitOptions). The one
// place their defaults, ranges and help are written; CommConfig::from_options, the cluster's
// platform_from_options and the driver read through it.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& communicator_option_table();

}  // namespace dplab
