// The virtual cluster as a layer around a communicator (docs/virtual_cluster.md): every
// operation of the inner communicator is also timed on the rank's virtual clock, by the
// platform's model, whatever backend carries the payload.
//
// The layer forwards each operation to the inner communicator unchanged (its checks run first,
// so nothing else is posted when they fail) and adds, beside it, what the model needs from the
// peers on a second communicator split from the inner one (same members, same order; its
// messages never match a payload receive):
//  - a collective: a max-allreduce of the members' post times; the operation starts at the
//    latest post, after the communicator's previous collective, and lasts what
//    cluster::collective_time says (comm/cluster/cost_collectives.h);
//  - a point-to-point message: a 16-byte header from the sender (its transmission start on its
//    port, and its post time), from which the receiver completes the message with its own
//    port; with a node-wide interface (comm/node_port.h) the header carries the message's number
//    on the interface instead, and both ends compute its end from the shared schedule.
// Post times travel as the bits of a double in an i64 (non-negative doubles order like their
// bits, so the max of the bits is the bits of the max).
//
// The inner communicator must complete its operations on the host (MPI, or any layer over it):
// the headers are host tensors, and a device backend's requests complete without a host wait,
// which would leave the clock behind (the NCCL backend refuses a cluster for that reason).
#pragma once
#include <memory>

#include "dplab/comm/communicator.h"

namespace dplab {

namespace cluster {
struct VirtualTime;
}
class NodePort;

// The world communicator `inner` timed on `vt`; `nic`, when set, is the node's shared interface,
// released when the returned communicator goes (the same program point on every rank).
// Communicators split from the result are layered alike and share `vt` and `nic`. Collective
// over `inner` (creates the header communicator).
std::shared_ptr<Communicator> with_virtual_time(std::shared_ptr<Communicator> inner,
                                                std::shared_ptr<cluster::VirtualTime> vt,
                                                std::shared_ptr<NodePort> nic = nullptr);

}  // namespace dplab
