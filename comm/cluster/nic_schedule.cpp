#include "dplab/comm/cluster/nic_schedule.h"

#include <algorithm>
#include <limits>
#include <map>

#include "dplab/core/error.h"

namespace dplab::cluster {

std::vector<double> nic_schedule(const std::vector<NicMessage>& msgs) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Each rank's queue, in posting order (indices into msgs).
  std::map<int, std::vector<size_t>> queues;
  for (size_t i = 0; i < msgs.size(); ++i) {
    DPLAB_CHECK(msgs[i].work >= 0, "nic_schedule: message {} has negative work {}", i,
                msgs[i].work);
    queues[msgs[i].rank].push_back(i);
  }
  for (auto& [rank, q] : queues)
    std::stable_sort(q.begin(), q.end(),
                     [&](size_t a, size_t b) { return msgs[a].seq < msgs[b].seq; });
  struct Head {
    std::vector<size_t>* queue;
    size_t pos = 0;    // next message of the queue
    double ready = 0;  // when that message may start: max(post, the previous one's end)
    double left = 0;   // work left of the message on the wire (when active)
    bool active = false;
  };
  std::vector<Head> heads;
  for (auto& [rank, q] : queues) {
    Head h{&q};
    h.ready = msgs[q[0]].post;
    heads.push_back(h);
  }
  std::vector<double> end(msgs.size(), 0.0);
  double t = kInf;
  for (const auto& h : heads) t = std::min(t, h.ready);
  size_t done = 0;
  while (done < msgs.size()) {
    // Messages whose time has come join the wire.
    for (auto& h : heads)
      if (!h.active && h.pos < h.queue->size() && h.ready <= t) {
        h.active = true;
        h.left = msgs[(*h.queue)[h.pos]].work;
      }
    int k = 0;
    for (const auto& h : heads) k += h.active ? 1 : 0;
    // The next event: an active message finishing (its work left at rate 1/k) or a waiting one
    // becoming ready.
    double next = kInf;
    for (const auto& h : heads) {
      if (h.active)
        next = std::min(next, t + h.left * k);
      else if (h.pos < h.queue->size())
        next = std::min(next, std::max(h.ready, t));
    }
    DPLAB_CHECK(next < kInf, "nic_schedule: no next event with {} of {} messages done", done,
                msgs.size());
    const double dt = next - t;
    for (auto& h : heads) {
      if (!h.active) continue;
      const size_t i = (*h.queue)[h.pos];
      h.left -= dt / k;
      // Finished (within rounding: the message that defines this event reaches 0 exactly).
      if (h.left <= 1e-12 * msgs[i].work) {
        end[i] = next;
        ++done;
        h.active = false;
        ++h.pos;
        if (h.pos < h.queue->size()) h.ready = std::max(msgs[(*h.queue)[h.pos]].post, next);
      }
    }
    t = next;
  }
  return end;
}

}  // namespace dplab::cluster
