// NCCL's tree allreduce (cost_collectives.h): a double binary tree across nodes (Sanders,
// Speck & Traeff 2009; NCCL 2.4, "Massively Scale Your Deep Learning Training with NCCL 2.4",
// NVIDIA blog 2019), each node a chain of its ranks; reduce up and broadcast down, pipelined.
#include <algorithm>
#include <cmath>

#include "dplab/comm/cluster/cost_collectives.h"

namespace dplab::cluster {

double tree_allreduce_time(const Platform& p, const Group& g, double bytes) {
  if (g.size() <= 1) return 0.0;
  const int N = g.nodes, r = g.ranks_per_node;
  // Latency: up and down each tree's depth across nodes, and along the chain within a node.
  const double depth = N > 1 ? std::ceil(std::log2(double(N))) : 0.0;
  const double latency = 2 * depth * p.nic.latency_s + 2.0 * (r - 1) * p.intra.latency_s;
  // Bandwidth, per node and direction: in each of the two trees (half the data each) a node is
  // an inner node in one (sends n/2 up, 2 x n/2 down) and a leaf in the other (n/2 up): 2n in
  // all. With 2 nodes each is the other's only child and parent: n/2 + n/2 = n.
  const double f = N > 2 ? 2.0 : 1.0;
  const double net = N > 1 ? f * bytes / node_network_rate(p, g) : 0.0;
  // Within a node the chain carries n up (reduce) and n down (broadcast) through every rank.
  const double chain = r > 1 ? 2.0 * bytes / p.intra.rate() : 0.0;
  // Pipelined: the slower of the two stages bounds the time.
  return latency + std::max(net, chain);
}

}  // namespace dplab::cluster
