// Hierarchical allreduce (cost_collectives.h): intra-node reduce-scatter, inter-node allreduce
// of each rank's 1/r share among the ranks with the same local rank (all r at once, sharing the
// interfaces), intra-node allgather (Horovod's hierarchical allreduce; MPICH's SMP-aware
// collectives).
#include <algorithm>

#include "dplab/comm/cluster/cost_collectives.h"

namespace dplab::cluster {

double hierarchical_allreduce_time(const Platform& p, const Group& g, double bytes) {
  if (g.size() <= 1) return 0.0;
  const int N = g.nodes, r = g.ranks_per_node;
  const double a = p.intra.latency_s, b = p.intra.rate();
  const double intra = 2 * ring_scatter_gather_time(r, a, b, bytes);
  // The r cross-node allreduces run at once: r x concurrent rings of one rank per node.
  const Group cross{N, 1, r * g.concurrent};
  const double inter =
      ring_allreduce_time(N, p.nic.latency_s, node_network_rate(p, cross), bytes / r);
  return intra + inter;
}

}  // namespace dplab::cluster
