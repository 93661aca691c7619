// The `cluster` option family (issue #20): `cluster` = PRESET|FILE, cluster.compute_scale,
// cluster.compute, cluster.data_rate (tools/train/option_keys.cpp documents them).
#pragma once
#include <optional>
#include <string>

#include "dplab/comm/cluster/platform.h"
#include "dplab/core/options.h"

namespace dplab::cluster {

// The platform option `cluster` names, with cluster.compute_scale applied; nullopt when the
// option is empty or "off".
std::optional<Platform> platform_from_options(const Options& opt);

// Whether cluster.compute asks for a compute profile (profile:FILE) rather than measured thread
// CPU time; checks the value (a usage error names the key and the accepted forms).
bool compute_is_profile(const Options& opt);
// The FILE of cluster.compute = profile:FILE, or empty for measured.
std::string compute_profile_path(const Options& opt);

// Virtual time is not wired into the training driver yet (its time figures, the trace, the
// algorithms' statistics are wall-clock): a run given `cluster` fails here with a clear message
// (after checking that the platform itself is valid) instead of silently running in wall-clock
// time. Called by the driver and where a world communicator is configured from options.
void refuse_cluster_until_wired(const Options& opt);

}  // namespace dplab::cluster
