// nccl-tests' bandwidth figures (NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = n / t, and
// busbw = algbw x a factor that makes it comparable to the rate of the links, whatever the rank
// count: allreduce 2(P-1)/P, reduce-scatter and allgather (P-1)/P, broadcast and reduce 1.
#pragma once
#include "dplab/comm/cluster/cost_collectives.h"

namespace dplab::cluster {

double bus_bandwidth_factor(Op op, int P);
// Bytes/s; n as in cost_collectives.h (allgather: the full output).
double bus_bandwidth(Op op, int P, double bytes, double seconds);

}  // namespace dplab::cluster
