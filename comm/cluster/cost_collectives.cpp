// Which algorithm a collective uses and its time (cost_collectives.h).
#include "dplab/comm/cluster/cost_collectives.h"

#include <cmath>

#include "dplab/core/error.h"

namespace dplab::cluster {

const char* op_name(Op op) {
  switch (op) {
    case Op::allreduce:
      return "allreduce";
    case Op::reduce_scatter:
      return "reduce_scatter";
    case Op::allgather:
      return "allgather";
    case Op::broadcast:
      return "broadcast";
    case Op::reduce:
      return "reduce";
    case Op::barrier:
      return "barrier";
  }
  return "?";
}

namespace {

double ceil_log2(int P) {
  return P > 1 ? std::ceil(std::log2(double(P))) : 0.0;
}

double time_with(const Platform& p, Op op, const Group& g, double bytes, Algorithm a) {
  const int P = g.size();
  const double alpha = ring_alpha(p, g), rate = ring_rate(p, g);
  switch (op) {
    case Op::allreduce:
      if (a == Algorithm::tree) return tree_allreduce_time(p, g, bytes);
      if (a == Algorithm::hierarchical) return hierarchical_allreduce_time(p, g, bytes);
      return ring_allreduce_time(P, alpha, rate, bytes);
    case Op::reduce_scatter:
    case Op::allgather:
      return ring_scatter_gather_time(P, alpha, rate, bytes);
    case Op::broadcast:
    case Op::reduce:
      if (P <= 1) return 0.0;
      if (a == Algorithm::tree) return ceil_log2(P) * (alpha + bytes / rate);
      return (P - 1) * alpha + bytes / rate;
    case Op::barrier:
      return ceil_log2(P) * alpha;
  }
  return 0.0;
}

}  // namespace

Algorithm resolve_algorithm(const Platform& p, Op op, const Group& g, double bytes,
                            Algorithm algo) {
  DPLAB_CHECK(g.nodes >= 1 && g.ranks_per_node >= 1 && g.concurrent >= 1,
              "collective group: nodes, ranks_per_node and concurrent must be >= 1, got {}, {}, {}",
              g.nodes, g.ranks_per_node, g.concurrent);
  DPLAB_CHECK(bytes >= 0, "collective of {} bytes: expected >= 0", bytes);
  switch (op) {
    case Op::allreduce:
      // Tree and hierarchical need several nodes (and hierarchical several ranks per node) to
      // differ from a ring.
      if (g.nodes <= 1) return Algorithm::ring;
      if (algo == Algorithm::hierarchical)
        return g.ranks_per_node > 1 ? Algorithm::hierarchical : Algorithm::ring;
      if (algo == Algorithm::auto_)
        // NCCL's tuner: the fastest of its algorithms by its own model (ring, tree).
        return tree_allreduce_time(p, g, bytes) < time_with(p, op, g, bytes, Algorithm::ring)
                   ? Algorithm::tree
                   : Algorithm::ring;
      return algo;
    case Op::broadcast:
    case Op::reduce:
      // NCCL has only rings for these; tree = MPICH's binomial tree.
      return algo == Algorithm::tree ? Algorithm::tree : Algorithm::ring;
    case Op::reduce_scatter:
    case Op::allgather:
    case Op::barrier:
      return Algorithm::ring;
  }
  return Algorithm::ring;
}

double collective_time(const Platform& p, Op op, const Group& g, double bytes, Algorithm algo) {
  return time_with(p, op, g, bytes, resolve_algorithm(p, op, g, bytes, algo));
}

}  // namespace dplab::cluster
