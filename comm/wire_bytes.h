// Wire bytes: what one rank puts on its links for one operation, as opposed to the payload it
// hands to the communicator (CommStats::bytes_sent, metrics `comm_bytes`). The figures follow
// the collective's algorithm and the group size P (NCCL-tests' "bus bandwidth" convention,
// docs/metrics_schema.md "Wire bytes"); n is the buffer in the wire type:
//
//   ring allreduce               2(P-1)/P n        each rank sends 2(P-1) chunks of n/P
//   reduce-scatter (n: input)    (P-1)/P n
//   allgather (b: each block)    (P-1) b           = (P-1)/P of the gathered n = P b
//   broadcast, reduce            (P-1)/P n         P-1 ranks receive n once; mean per rank
//   tree allreduce               2(P-1)/P n        reduce up + broadcast down: 2(P-1) n in all
//   hierarchical allreduce       intra reduce-scatter (r-1)/r n + inter ring allreduce of n/r
//                                over N nodes 2(N-1)/N n/r + intra allgather (r-1)/r n
//   barrier                      0
//   point-to-point send          n (a receive puts nothing on this rank's links)
//
// Which algorithm: on a virtual cluster the cost model's (cluster::resolve_algorithm, the same
// choice that times the operation); on MPI and NCCL without one, ring, which is what the cost
// model assumes for them (MPICH picks per message size; the ring is the bandwidth-optimal
// schedule that large-message MPICH and NCCL use). Every ring formula is exact per rank; the
// tree and broadcast formulas are the group's total divided by P.
#pragma once
#include "dplab/comm/cluster/cost_collectives.h"

namespace dplab {

// `bytes` follows the cost model's convention: allreduce, broadcast, reduce: the buffer;
// reduce-scatter: the full input; allgather: the full output (P blocks).
double ring_wire_bytes(cluster::Op op, int P, double bytes);
// The hierarchical allreduce of `bytes` on `nodes` nodes of `ranks_per_node` ranks each.
double hierarchical_wire_bytes(int nodes, int ranks_per_node, double bytes);
// For a group the cost model resolved to `algo` (ring, tree or hierarchical).
double wire_bytes(cluster::Op op, const cluster::Group& g, cluster::Algorithm algo, double bytes);

}  // namespace dplab
