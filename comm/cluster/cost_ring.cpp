// Ring collectives and the rates a group's ring or tree gets (cost_collectives.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/core/error.h"

namespace dplab::cluster {

// Reduce-scatter then allgather, each P-1 steps of n/P bytes per rank (Patarasuk & Yuan 2009;
// Thakur, Rabenseifner & Gropp 2005, eq. for Rabenseifner's algorithm has the same bandwidth
// term): every rank sends and receives at once in each step, so full-duplex links carry both.
double ring_allreduce_time(int P, double alpha, double rate, double bytes) {
  if (P <= 1) return 0.0;
  return 2.0 * (P - 1) * alpha + 2.0 * (P - 1) / P * bytes / rate;
}

double ring_scatter_gather_time(int P, double alpha, double rate, double bytes) {
  if (P <= 1) return 0.0;
  return (P - 1) * alpha + double(P - 1) / P * bytes / rate;
}

double node_network_rate(const Platform& p, const Group& g) {
  // The group's r ranks of a node sit on min(r, nics) interfaces (rails: local rank % nics);
  // `concurrent` groups of the same shape use the same ones, so each interface carries
  // ceil(concurrent x used / nics) of them.
  const int used = std::min(g.ranks_per_node, p.nics);
  const int sharing = (g.concurrent * used + p.nics - 1) / p.nics;
  return used * p.nic_rate(sharing);
}

double ring_alpha(const Platform& p, const Group& g) {
  if (g.nodes <= 1) return p.intra.latency_s;
  // A step ends when its slowest hop does: the one that crosses the network.
  return g.ranks_per_node > 1 ? std::max(p.intra.latency_s, p.nic.latency_s) : p.nic.latency_s;
}

double ring_rate(const Platform& p, const Group& g) {
  if (g.nodes <= 1) return p.intra.rate();
  // NCCL runs one ring per interface in use (channels), each entering and leaving every node
  // once: a node's network hop carries the full ring traffic at the node's network rate; the
  // intra-node hops carry it at the link rate of one rank.
  const double net = node_network_rate(p, g);
  return g.ranks_per_node > 1 ? std::min(p.intra.rate(), net) : net;
}

}  // namespace dplab::cluster
