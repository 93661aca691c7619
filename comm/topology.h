// Topology: the communicators a distributed algorithm needs.
//   world  all ranks
//   node   the ranks of this rank's (virtual) node, ordered by world rank
//   cross  one rank per node: those with the same local rank (DASO's "global groups");
//          cross rank = node id
// Nodes come from the host (MPI_Comm_split_type SHARED) or, with ranks_per_node = N
// (--ranks-per-node N), from consecutive blocks of N world ranks ("virtual nodes"), so a
// hierarchy can be studied on one machine.
#pragma once
#include <memory>

#include "dplab/comm/communicator.h"

namespace dplab {

class Topology {
 public:
  // Splits `world` into node and cross communicators. Every node must hold the same number of
  // ranks (a clear error otherwise: cross groups would be ragged).
  explicit Topology(std::shared_ptr<Communicator> world);
  // Initialises MPI if needed and builds the world from options (comm = mpi|nccl|auto,
  // ranks_per_node, link.*, comm.wait, comm.timeout_s), on `virtual_time` under a cluster
  // (comm/world.h make_world).
  static Topology from_options(const Options& opt,
                               std::shared_ptr<cluster::VirtualTime> virtual_time = nullptr);

  Communicator& world() const { return *world_; }
  Communicator& node() const { return *node_; }
  Communicator& cross() const { return *cross_; }
  const std::shared_ptr<Communicator>& world_ptr() const { return world_; }
  const std::shared_ptr<Communicator>& node_ptr() const { return node_; }
  const std::shared_ptr<Communicator>& cross_ptr() const { return cross_; }
  int node_id() const { return node_id_; }
  int num_nodes() const { return num_nodes_; }
  int local_rank() const { return node_->rank(); }
  int ranks_per_node() const { return node_->size(); }

 private:
  std::shared_ptr<Communicator> world_, node_, cross_;
  int node_id_ = 0, num_nodes_ = 1;
};

}  // namespace dplab
