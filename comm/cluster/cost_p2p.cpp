#include "dplab/comm/cluster/cost_p2p.h"

#include <algorithm>

#include "dplab/core/error.h"

namespace dplab::cluster {

double p2p_time(const Platform& p, double bytes, bool same_node, int nic_sharing) {
  DPLAB_CHECK(bytes >= 0, "p2p_time: bytes must be >= 0, got {}", bytes);
  if (same_node) return p.intra.latency_s + bytes / p.intra.rate();
  return p.nic.latency_s + bytes / p.nic_rate(nic_sharing);
}

int nic_sharing(const Platform& p, const std::vector<int>& active_local_ranks, int local_rank) {
  const int mine = local_rank % p.nics;
  int n = 0;
  bool self = false;
  for (int r : active_local_ranks) {
    if (r % p.nics == mine) ++n;
    if (r == local_rank) self = true;
  }
  return self ? n : n + 1;
}

}  // namespace dplab::cluster
