// The network interfaces of a node, shared by its ranks, in virtual time (issue #20 item 2:
// "contention where several ranks of a node share its interface"; docs/virtual_cluster.md,
// "Point to point"). The ranks of a node are separate processes, so the interface's state lives
// in shared memory (an MPI_Win_allocate_shared window over the host's ranks): every rank
// publishes there the off-node messages it posts (virtual post time, seconds on the wire alone)
// and a *floor*, a lower bound on the virtual post time of any message it may still post.
//
// A message's end (its last byte leaving the interface) is computed by nic_schedule
// (comm/cluster/nic_schedule.h: processor sharing among the ranks with a message on the wire,
// each rank's own messages in order) over the messages published so far. It is final once no
// other rank of the interface can still add a message that starts before that end: for each
// such rank k, max(floor_k, the end of k's last published message) >= the end (k's later
// messages queue behind its last one and are posted at or after its floor). The schedule is
// causal (a message starting after the end does not change it), so a final end is the same
// whatever order the processes reached the shared memory in real time: deterministic. Sender
// and receiver both compute it from the same published data; no extra message.
//
// Floors: the rank's compute thread raises its floor when it posts (the post time) and while
// it waits for an operation (the clock, or a lower bound of that operation's end: its clock
// cannot be lower when the wait returns). A rank blocked outside this communicator's waits (a
// real-time-only communicator, GradSync's finish) does not raise it; a message that depends on
// such a rank could wait forever, so after `deadline_s` of real time waiting for finality the
// end is taken as it stands (counted in fallbacks(), with one warning on stderr): that end may
// depend on timing. Off-node sends are assumed to be posted by the clock's owner thread.
//
// Opt-in (option cluster.nic_sharing, CommConfig::nic_sharing): the driver's per-step agreement
// is a real-time-only collective, where a node peer that lags in virtual time would hold its
// node's messages until the deadline (docs/virtual_cluster.md, "Point to point", measures it).
// Needs every rank on one host (shared memory); otherwise create() returns null and each rank's
// interface is its own (cluster::Port), as without the option.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dplab/comm/cluster/platform.h"
#include "dplab/comm/communicator.h"

namespace dplab {

class NodePort {
 public:
  // Collective over MPI_COMM_WORLD (every rank calls it, with the same platform and shape).
  // Null when no interface is shared by two ranks, the network is free (unlimited rate) or the
  // ranks are not all on one host.
  static std::shared_ptr<NodePort> create(const cluster::Platform& p, const cluster::Shape& s,
                                          const WaitOptions& wait);
  ~NodePort();
  NodePort(const NodePort&) = delete;
  NodePort& operator=(const NodePort&) = delete;

  // Publishes an off-node message of this rank posted at `post`, `work` seconds on the wire
  // alone; returns its sequence number (this rank's posting order). Raises the floor to `post`.
  uint64_t add(double post, double work);
  // The final end of message `seq` of world rank `sender` (see above); waits politely until it
  // is final or the deadline passes, calling `idle` with the current lower bound of the end in
  // the loop (a waiting owner raises its floor with it).
  double end(int sender, uint64_t seq, const std::string& what,
             const std::function<void(double)>& idle);
  // A lower bound of that end from what is published now (never waits).
  double tentative_end(int sender, uint64_t seq);
  // Raises this rank's floor to t (never lowers it).
  void raise_floor(double t);
  int64_t fallbacks() const { return fallbacks_.load(); }
  // Collective over the host's ranks (MPI_Win_free): publishes an infinite floor (this rank
  // posts nothing more) and unmaps the shared memory. Called by the world communicator's
  // destructor, the same program point on every rank; later calls do nothing, later use fails.
  void release();

  struct Segment;  // one rank's published state (node_port.cpp)

 private:
  NodePort() = default;
  struct Eval {
    double end = 0;
    bool final = false;
    bool found = false;
  };
  Eval evaluate(int sender, uint64_t seq);
  void retire_some();
  void check_live(const char* what) const;

  cluster::Shape shape_;
  int nics_ = 1;
  int rank_ = 0;
  WaitOptions wait_;
  double deadline_s_ = 2.0;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Comm shm_comm_ = MPI_COMM_NULL;
  std::vector<Segment*> seg_;  // by world rank
  std::mutex mu_;              // this rank's writes to its segment; release
  std::atomic<int64_t> fallbacks_{0};
  std::atomic<bool> warned_{false};
};

}  // namespace dplab
