// How one network interface shared by several ranks of a node serves their off-node messages
// (docs/virtual_cluster.md, "Point to point", NIC sharing): each rank's messages leave one after
// another (its own queue, in posting order), and the ranks with a message on the wire share the
// interface equally (processor sharing: k messages in flight each progress at rate/k). Two ranks
// posting n bytes at once both finish at 2n/B; one alone at n/B.
// Causal: a message's end depends only on messages that start before it ends, so adding
// messages that start later never changes it (comm/node_port.h relies on this to decide when an
// end is final). Pure computation, no MPI.
#pragma once
#include <cstdint>
#include <vector>

namespace dplab::cluster {

struct NicMessage {
  int rank = 0;      // sender (any id; messages of one rank queue behind each other)
  uint64_t seq = 0;  // the sender's posting order
  double post = 0;   // virtual post time
  double work = 0;   // seconds on the wire alone (bytes / the interface's rate); >= 0
};

// The virtual time each message's last byte leaves the interface, in the order given.
std::vector<double> nic_schedule(const std::vector<NicMessage>& msgs);

}  // namespace dplab::cluster
