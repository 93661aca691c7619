// A process's virtual time (issue #20): the platform, the job's shape, the rank's clock and its
// ports, shared by the world communicator and every communicator split from it (as the link
// emulator was). With it, point-to-point messages of the MPI backend are timed by the model
// (comm/mpi_communicator.cpp): the sender's transmission start travels in a 16-byte header
// message on a shadow communicator, the receiver completes the message from it with its own
// port. Collectives are not wired yet and refuse to run under a virtual time.
#pragma once
#include <mutex>

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
};

}  // namespace dplab::cluster
