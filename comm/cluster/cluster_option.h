// The `cluster` option family (issue #20): `cluster` = PRESET|FILE, cluster.compute_scale,
// cluster.compute, cluster.data_rate, and the link.intra / link.inter shorthand for a platform
// (train/config/option_keys.cpp documents them).
#pragma once
#include <optional>
#include <string>

#include "dplab/comm/cluster/platform.h"
#include "dplab/core/options.h"

namespace dplab::cluster {

// The platform of a run, with cluster.compute_scale applied: the one option `cluster` names,
// or the link.* shorthand's (link_platform) when link.intra or link.inter is set; nullopt when
// none is given (empty or "off"). Giving both `cluster` and link.* is a usage error: the
// cluster's platform is the one cost model.
std::optional<Platform> platform_from_options(const Options& opt);

// The link.* shorthand (docs/virtual_cluster.md, "The link shorthand"): a platform "link" with
// `intra` between the ranks of a node and one network interface per node of `inter`'s latency
// and rate (efficiency 1, no oversubscription, ring collectives as MPICH runs them on plain
// links); a class left unset is free (latency 0, unlimited rate). Nodes: `ranks_per_node`
// (--ranks-per-node) when > 0, else every rank on one node.
Platform link_platform(const std::optional<Link>& intra, const std::optional<Link>& inter,
                       int ranks_per_node);

// Whether cluster.compute asks for a compute profile (profile:FILE) rather than measured thread
// CPU time; checks the value (a usage error names the key and the accepted forms).
bool compute_is_profile(const Options& opt);
// The FILE of cluster.compute = profile:FILE, or empty for measured.
std::string compute_profile_path(const Options& opt);

}  // namespace dplab::cluster
