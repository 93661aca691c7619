// A rank's network port in virtual time: full duplex, so sending and receiving queue
// separately (docs/virtual_cluster.md, "Point to point"). A message leaves when the sender has
// posted it and the sender's egress is free, enters when the receiver's ingress is free, and
// completes one latency after its last byte: two ranks exchanging n bytes each finish at
// alpha + n/B, as a one-way send does; two messages from one rank queue on its egress.
// The sender computes depart() and sends the start time along with the data; the receiver
// computes arrive() from it (each side only touches its own port).
#pragma once

namespace dplab::cluster {

struct Port {
  double egress_free = 0;   // virtual time the last queued send's last byte has left
  double ingress_free = 0;  // virtual time the last received message's last byte has entered

  // Sender side: start of transmission of a message posted at `post` taking `serialization`
  // (bytes / rate) seconds on the wire; the egress is busy until start + serialization.
  double depart(double post, double serialization) {
    const double start = post > egress_free ? post : egress_free;
    egress_free = start + serialization;
    return start;
  }
  // Receiver side: completion time of a message whose transmission started at `start`.
  double arrive(double start, double latency, double serialization) {
    const double in = start > ingress_free ? start : ingress_free;
    ingress_free = in + serialization;
    return in + serialization + latency;
  }
};

}  // namespace dplab::cluster
