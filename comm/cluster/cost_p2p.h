// Point-to-point cost on a platform (docs/virtual_cluster.md, "Point to point").
//   time = alpha + n / B
// alpha, B: the intra-node link when both ranks share a node, else the network interface's
// latency and its rate divided among the ranks using it at once (NIC sharing) and by the switch
// oversubscription. Links are full duplex: a rank's sending does not slow its receiving, so an
// exchange (both ranks send n at once) costs the same as a one-way send.
#pragma once
#include <vector>

#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

// Seconds to move `bytes` from one rank to another. `nic_sharing`: ranks sending off-node at
// the same time through the busier of the two interfaces involved (the sender's for egress,
// the receiver's for ingress), at least 1; ignored within a node.
double p2p_time(const Platform& p, double bytes, bool same_node, int nic_sharing = 1);

// How many of `active_local_ranks` (local ranks of one node sending off-node at the same time)
// use the same interface as `local_rank` (interface = local rank % nics), counting itself.
int nic_sharing(const Platform& p, const std::vector<int>& active_local_ranks, int local_rank);

}  // namespace dplab::cluster
