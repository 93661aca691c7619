// Collective costs on a platform (docs/virtual_cluster.md, "Collectives", with the sources of
// each formula). P ranks, n bytes (allreduce: the buffer; reduce-scatter: the full input;
// allgather: the full output; broadcast/reduce: the buffer), alpha the per-step latency and B
// the rate of the slowest link a step crosses.
//   ring allreduce        2(P-1) alpha + 2(P-1)/P n/B
//   ring reduce-scatter,
//   ring allgather        (P-1) alpha + (P-1)/P n/B
//   ring broadcast/reduce (P-1) alpha + n/B            (pipelined chain, as NCCL)
//   tree broadcast/reduce ceil(log2 P) (alpha + n/B)   (binomial tree, as MPICH for short ones)
//   barrier               ceil(log2 P) alpha           (dissemination)
//   tree allreduce        NCCL's double binary tree across nodes, chains within them:
//                         2 ceil(log2 N) alpha_net + 2(r-1) alpha_intra
//                           + max(f n / B_node, 2n / B_intra),  f = 1 for N = 2 else 2
//   hierarchical          intra ring reduce-scatter (r ranks) + inter ring allreduce of n/r
//                         (N nodes, the r ranks of a node at once) + intra ring allgather
// N nodes of r group ranks each; B_node: the network rate one node gives the group.
#pragma once
#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

enum class Op { allreduce, reduce_scatter, allgather, broadcast, reduce, barrier };
const char* op_name(Op op);

// The ranks a collective runs on.
struct Group {
  int nodes = 1;           // nodes the group spans
  int ranks_per_node = 1;  // members on each of those nodes
  // Groups of the same shape running their own collective at the same time on the same nodes
  // and sharing the nodes' interfaces (DASO's cross-node groups: one per local rank).
  int concurrent = 1;
  int size() const { return nodes * ranks_per_node; }
};

// A collective over the whole job.
inline Group world_group(const Shape& s) {
  return {s.nodes, s.ranks_per_node, 1};
}

// The building blocks, for a flat group of P ranks over links (alpha, rate).
double ring_allreduce_time(int P, double alpha, double rate, double bytes);
double ring_scatter_gather_time(int P, double alpha, double rate, double bytes);

// Per-step latency and bulk rate of a ring through the group (the slowest hop).
double ring_alpha(const Platform& p, const Group& g);
double ring_rate(const Platform& p, const Group& g);
// Network rate one node gives one of the group's rings or trees (its interfaces, shared with
// the concurrent groups, across the switch).
double node_network_rate(const Platform& p, const Group& g);

double tree_allreduce_time(const Platform& p, const Group& g, double bytes);
double hierarchical_allreduce_time(const Platform& p, const Group& g, double bytes);

// The algorithm `algo` resolves to for this operation (auto: NCCL's choice; algorithms that do
// not exist for an operation fall back to ring, docs/virtual_cluster.md says which).
Algorithm resolve_algorithm(const Platform& p, Op op, const Group& g, double bytes, Algorithm algo);
// Seconds for the collective; algo defaults to the platform's.
double collective_time(const Platform& p, Op op, const Group& g, double bytes, Algorithm algo);
inline double collective_time(const Platform& p, Op op, const Group& g, double bytes) {
  return collective_time(p, op, g, bytes, p.algorithm);
}

}  // namespace dplab::cluster
