// The order in which queued point-to-point operations reach the device (pure logic, no NCCL:
// unit-tested everywhere). Used by the NCCL backend (nccl_communicator.h), issue #19, item 7.
//
// NCCL has no tags, and a lone send can deadlock against the peer's lone send, so isend/irecv
// are queued and issued later as ncclGroupStart/End groups. All communicators of a device share
// one communication stream, and NCCL operations on one stream run in issue order, so the issue
// order must be the same on every rank, across communicators too. The rule:
//
//   Queued point-to-point operations of every communicator of a family (a world and everything
//   split from it) are issued before any other operation of any communicator of the family:
//   the next collective, split, or wait/test of a queued request, whichever communicator it is
//   on. Then the stream sees operations in the program's posting order, the same on every rank
//   as long as ranks post in the same order (MPI's rule).
//
// Before, a communicator's queue was issued only by its own next operation: a rank that posted
// a collective on another communicator before waiting for its sends put the collective first,
// a rank that waited first put the sends first, and the two ranks deadlocked.
//
// The flushed operations are issued as one group per communicator, communicators in the order of
// their first queued operation; within a group, sorted by (peer, tag) with posting order kept for
// equal keys (NCCL pairs a rank's sends to a peer with the peer's receives in call order, so
// ordering both sides by tag gives the pairing MPI's tag matching would).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dplab {

struct QueuedP2p {
  int comm = 0;  // the communicator (any id unique within the family)
  int peer = 0, tag = 0;
};

// The queue (in posting order) as groups of indices into `queued`, in issue order.
std::vector<std::vector<size_t>> p2p_issue_groups(const std::vector<QueuedP2p>& queued);

}  // namespace dplab
