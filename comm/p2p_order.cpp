#include "dplab/comm/p2p_order.h"

#include <algorithm>

namespace dplab {

std::vector<std::vector<size_t>> p2p_issue_groups(const std::vector<QueuedP2p>& queued) {
  std::vector<int> comms;  // in order of first queued operation
  for (const QueuedP2p& q : queued)
    if (std::find(comms.begin(), comms.end(), q.comm) == comms.end()) comms.push_back(q.comm);
  std::vector<std::vector<size_t>> groups;
  for (int c : comms) {
    std::vector<size_t> g;
    for (size_t i = 0; i < queued.size(); ++i)
      if (queued[i].comm == c) g.push_back(i);
    std::stable_sort(g.begin(), g.end(), [&](size_t a, size_t b) {
      const QueuedP2p &x = queued[a], &y = queued[b];
      return x.peer != y.peer ? x.peer < y.peer : x.tag < y.tag;
    });
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace dplab
