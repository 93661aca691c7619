// The training driver's virtual time, handed to the world communicators that an algorithm builds
// from options (issue #20, docs/virtual_cluster.md "One time base").
//
// Why a scope: an algorithm builds its world inside its constructor (Topology::from_options ->
// make_world), where the driver cannot reach, yet the driver must read the same clock as the
// communicators (TrainContext::time, the tracer, every figure it reports) and must build that
// clock itself (its compute mode, this rank's --slowdown in its scale, profile replay). So the
// driver builds the rank's VirtualTime on its compute thread and installs it here while the run
// lives; make_world adopts it for a world configured with a cluster on that thread. The slot is
// thread-local because a VirtualClock belongs to one thread (its CPU time is that thread's
// compute): no other thread ever sees it. This is the one piece of mutable state outside an
// object in the virtual cluster; it is borrowed (the driver owns the VirtualTime) and emptied
// when the scope ends.
#pragma once
#include <memory>

#include "dplab/comm/cluster/virtual_time.h"

namespace dplab::cluster {

class VirtualTimeScope {
 public:
  // Installs `vt` for the calling thread until destruction (scopes nest: the previous one is
  // restored).
  explicit VirtualTimeScope(std::shared_ptr<VirtualTime> vt);
  ~VirtualTimeScope();
  VirtualTimeScope(const VirtualTimeScope&) = delete;
  VirtualTimeScope& operator=(const VirtualTimeScope&) = delete;

  // The VirtualTime installed on the calling thread, or null.
  static std::shared_ptr<VirtualTime> current();

 private:
  std::shared_ptr<VirtualTime> previous_;
};

}  // namespace dplab::cluster
