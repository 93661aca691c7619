// A process's virtual time (issue #20): the platform, the job's shape, the rank's clock and its
// ports, shared by the world communicator and every communicator split from it (as the link
// emulator was). With it, the layer of comm/virtual_communicator.h times every operation of
// the communicator it wraps by the model: the sender's transmission start travels in a 16-byte
// header message on a header communicator, the receiver completes the message from it with its
// own port; a collective's members' post times meet in a max-allreduce there.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dplab/comm/cluster/platform.h"
#include "dplab/comm/cluster/port.h"
#include "dplab/comm/cluster/virtual_clock.h"

namespace dplab::cluster {

struct VirtualTime {
  VirtualTime(Platform p, Shape s, VirtualClock::Compute mode)
      : platform(std::move(p)), shape(s), clock(mode, platform.compute_scale) {}
  const Platform platform;
  const Shape shape;
  VirtualClock clock;
  // Full-duplex ports, one per link class (the NVLink/shared-memory port and the network
  // interface); guarded by port_mu.
  std::mutex port_mu;
  Port intra_port, net_port;

  Port& port(bool same_node) { return same_node ? intra_port : net_port; }
  const Link& link(bool same_node) const { return same_node ? platform.intra : platform.nic; }
  // Rate of one message: the intra link, or the interface across the switch (one sender).
  double rate(bool same_node) const {
    return same_node ? platform.intra.rate() : platform.nic_rate(1);
  }
  // The link events (comm/cluster/events.h) on a message between nodes a and b posted at t:
  // none within a node.
  LinkFactor link_factor(bool same_node, double t, int a, int b) const {
    if (same_node || !platform.events.has_link_events()) return {};
    return platform.events.path_at({a, b}, t);
  }
  // The platform for a collective over `nodes` starting at t: the interfaces at their slowest
  // member's link events then (the platform itself when there are none).
  Platform platform_at(double t, const std::vector<int>& nodes) const {
    Platform p = platform;
    if (nodes.size() < 2 || !platform.events.has_link_events()) return p;
    const LinkFactor f = platform.events.path_at(nodes, t);
    p.nic.bandwidth_Bps *= f.bandwidth;
    p.nic.latency_s *= f.latency;
    return p;
  }

  // When a gradient bucket holding parameter segments [first, last] (arena order) becomes
  // ready in backward (GradSync's grad-ready hook, on the compute thread): the clock's now, or,
  // when the training driver replays a compute profile, backward's start + the profile's
  // fraction of backward (train/virtual/profile_replay.h). Set before training, read only by the
  // compute thread.
  std::function<double(int first, int last)> bucket_ready;
  double ready_time(int first, int last) {
    return bucket_ready ? bucket_ready(first, last) : clock.now();
  }

  // The post time of an operation the calling thread posts now: the time set for this thread
  // by PostAt (GradSync's communication thread posts a bucket at the virtual time the compute
  // thread made it ready, not when the thread got round to it), else the clock's now.
  double post_time() {
    {
      std::lock_guard<std::mutex> lock(post_at_mu_);
      auto it = post_at_.find(std::this_thread::get_id());
      if (it != post_at_.end()) return it->second;
    }
    return clock.now();
  }
  std::optional<double> exchange_post_at(std::optional<double> t) {
    std::lock_guard<std::mutex> lock(post_at_mu_);
    const auto id = std::this_thread::get_id();
    std::optional<double> old;
    if (auto it = post_at_.find(id); it != post_at_.end()) {
      old = it->second;
      post_at_.erase(it);
    }
    if (t) post_at_[id] = *t;
    return old;
  }

 private:
  std::mutex post_at_mu_;
  std::map<std::thread::id, double> post_at_;
};

// While it lives, the operations the calling thread posts on `vt` are posted at virtual time t.
class PostAt {
 public:
  PostAt(VirtualTime& vt, double t) : vt_(vt), old_(vt.exchange_post_at(t)) {}
  ~PostAt() { vt_.exchange_post_at(old_); }
  PostAt(const PostAt&) = delete;
  PostAt& operator=(const PostAt&) = delete;

 private:
  VirtualTime& vt_;
  std::optional<double> old_;
};

}  // namespace dplab::cluster
