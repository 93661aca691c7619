#include "dplab/comm/wire_bytes.h"

namespace dplab {

double ring_wire_bytes(cluster::Op op, int P, double bytes) {
  if (P <= 1) return 0.0;
  const double f = double(P - 1) / double(P);
  switch (op) {
    case cluster::Op::allreduce:
      return 2.0 * f * bytes;
    case cluster::Op::reduce_scatter:
    case cluster::Op::allgather:
    case cluster::Op::broadcast:
    case cluster::Op::reduce:
      return f * bytes;
    case cluster::Op::barrier:
      return 0.0;
  }
  return 0.0;
}

double hierarchical_wire_bytes(int nodes, int ranks_per_node, double bytes) {
  const double r = ranks_per_node;
  return ring_wire_bytes(cluster::Op::reduce_scatter, ranks_per_node, bytes) +
         ring_wire_bytes(cluster::Op::allreduce, nodes, bytes / r) +
         ring_wire_bytes(cluster::Op::allgather, ranks_per_node, bytes);
}

double wire_bytes(cluster::Op op, const cluster::Group& g, cluster::Algorithm algo, double bytes) {
  if (op == cluster::Op::allreduce && algo == cluster::Algorithm::hierarchical)
    return hierarchical_wire_bytes(g.nodes, g.ranks_per_node, bytes);
  // Tree: the same total as the ring (see the header), so the same mean per rank.
  return ring_wire_bytes(op, g.size(), bytes);
}

}  // namespace dplab

#include "dplab/comm/communicator.h"

namespace dplab {

double Communicator::wire_bytes(cluster::Op op, double bytes) const {
  return ring_wire_bytes(op, size(), bytes);
}

}  // namespace dplab
