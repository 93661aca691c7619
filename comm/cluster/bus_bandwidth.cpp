#include "dplab/comm/cluster/bus_bandwidth.h"

#include "dplab/core/error.h"

namespace dplab::cluster {

double bus_bandwidth_factor(Op op, int P) {
  DPLAB_CHECK(P >= 1, "bus_bandwidth_factor: P must be >= 1, got {}", P);
  switch (op) {
    case Op::allreduce:
      return 2.0 * (P - 1) / P;
    case Op::reduce_scatter:
    case Op::allgather:
      return double(P - 1) / P;
    case Op::broadcast:
    case Op::reduce:
      return 1.0;
    case Op::barrier:
      return 0.0;
  }
  return 0.0;
}

double bus_bandwidth(Op op, int P, double bytes, double seconds) {
  DPLAB_CHECK(seconds > 0, "bus_bandwidth: time must be positive, got {}", seconds);
  return bytes / seconds * bus_bandwidth_factor(op, P);
}

}  // namespace dplab::cluster
