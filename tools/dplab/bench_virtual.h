// `dplab bench allreduce --cluster PRESET|FILE` (issue #20 item 7): allreduce and a
// point-to-point exchange timed in virtual time on a modelled cluster, printed beside the cost
// model's formula for them (docs/virtual_cluster.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab::cli {

struct VirtualBenchArgs {
  std::string cluster;         // preset or cluster file
  int ranks_per_node = 0;      // 0: the platform's
  std::vector<int64_t> sizes;  // bytes
  int64_t iters = 5;
  bool json = false;
  bool nic_sharing = false;  // the ranks of a node share its interface (comm/node_port.h)
};

// Run under mpiexec; rank 0 prints. Returns the exit status.
int run_virtual_allreduce_bench(const VirtualBenchArgs& a);

}  // namespace dplab::cli
