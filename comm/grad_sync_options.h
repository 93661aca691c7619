// GradSync's option keys: bucket sizes, wire type, hierarchy, reducer and gradient compression,
// read under an algorithm's prefix ("allreduce.", "hybrid.", "daso.local.", "crossover.sync.").
// The one place their defaults, ranges and help are written: GradSyncOptions and
// CompressOptions (comm/grad_sync.h, comm/grad_compress.h) take their members' defaults from
// it, and their from_options read through it.
#pragma once
#include <string>

#include "dplab/core/option_decl.h"

namespace dplab {

// The keys without a prefix ("bucket_cap_mb", ...).
const OptionTable& grad_sync_options();
// The keys under `prefix`, `what` (the algorithm, or its phase) heading each key's help.
OptionTable grad_sync_option_table(const std::string& prefix, const std::string& what);

}  // namespace dplab
