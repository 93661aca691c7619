#include "dplab/comm/topology.h"

#include <algorithm>
#include <map>

#include "dplab/comm/world.h"
#include "dplab/core/error.h"

namespace dplab {

Topology::Topology(std::shared_ptr<Communicator> world) : world_(std::move(world)) {
  const int n = world_->size();
  std::map<int, int> per_node;
  for (int r = 0; r < n; ++r) ++per_node[world_->node_of(r)];
  num_nodes_ = static_cast<int>(per_node.size());
  const int first = per_node.begin()->second;
  for (auto& [node, count] : per_node)
    DPLAB_CHECK(count == first,
                "topology: node {} has {} ranks but node {} has {}; every node needs the same "
                "number of ranks (start as many ranks on each host, or use --ranks-per-node)",
                node, count, per_node.begin()->first, first);
  node_id_ = world_->node_of(world_->rank());
  node_ = world_->split(node_id_, world_->rank(), "node");
  cross_ = world_->split(node_->rank(), node_id_, fmt::format("cross{}", node_->rank()));
}

Topology Topology::from_options(const Options& opt,
                                std::shared_ptr<cluster::VirtualTime> virtual_time) {
  // Backend by option comm (mpi | nccl | auto): comm/world.h.
  return Topology(make_world(opt, std::move(virtual_time)));
}

}  // namespace dplab
