// A modelled cluster ("platform") for the virtual cluster (issue #20, docs/virtual_cluster.md):
// nodes of ranks, the links between the ranks of a node, each node's network interfaces, the
// switch, and how collectives are charged. Pure data: the cost model (cost_p2p.h,
// cost_collectives.h) turns it into seconds.
#pragma once
#include <string>
#include <vector>

#include "dplab/comm/cluster/events.h"

namespace dplab::cluster {

// One class of link, per direction: a transfer of n bytes takes latency_s + n / rate(). Links
// are full duplex: sending and receiving at once each get the full rate.
struct Link {
  double latency_s = 0;
  double bandwidth_Bps = 0;  // line rate per direction, bytes/s; +infinity: a free link
  // Fraction of the line rate a bulk transfer achieves (protocol overhead): NCCL's maintainers
  // quote about 80% on NVLink (docs/virtual_cluster.md, "Presets").
  double efficiency = 1.0;
  double rate() const { return bandwidth_Bps * efficiency; }
};

// How collectives are charged. auto_ picks as NCCL's tuner does: the fastest of ring and tree
// for allreduce (tree only across nodes), ring for the other collectives. hierarchical
// (intra-node reduce-scatter, inter-node allreduce, intra-node allgather) is Horovod's /
// MPICH's two-level scheme; NCCL does not pick it, so auto_ never does either.
enum class Algorithm { auto_, ring, tree, hierarchical };

const char* algorithm_name(Algorithm a);
// "auto", "ring", "tree", "hierarchical"; `what` names the file/key in the error.
Algorithm parse_algorithm(const std::string& text, const std::string& what);

struct Platform {
  std::string name;
  std::string description;
  // Ranks per node when --ranks-per-node is not given (one rank per GPU or per core).
  int ranks_per_node = 1;
  Link intra;  // between two ranks of one node (per rank: NVLink per GPU, shared memory)
  Link nic;    // one network interface of a node
  // Network interfaces per node; local rank r uses interface r % nics ("rails"), so the ranks
  // of a node on one interface share it.
  int nics = 1;
  // Switch oversubscription (>= 1): under all-to-all load an interface gets 1/oversubscription
  // of its rate across the switch (a 2:1 fat tree: 2).
  double oversubscription = 1.0;
  // Virtual compute time = measured thread CPU time x compute_scale (cluster.compute_scale
  // overrides it).
  double compute_scale = 1.0;
  Algorithm algorithm = Algorithm::auto_;
  // Where the figures come from (URL or title, and what they say).
  std::vector<std::string> sources;
  // Stragglers and degraded links over virtual time (comm/cluster/events.h): the file's
  // [[event]] tables, then option cluster.events' file.
  Events events;

  // Rate one interface gives one rank when `sharing` ranks use it at once, across the switch.
  double nic_rate(int sharing = 1) const;
  // Throws a dplab::Error naming `where` (file or preset) and the bad field.
  void validate(const std::string& where) const;
};

// Nodes x ranks per node of a job on a platform.
struct Shape {
  int nodes = 1;
  int ranks_per_node = 1;
  int world() const { return nodes * ranks_per_node; }
  int node_of(int rank) const { return rank / ranks_per_node; }
  int local_rank(int rank) const { return rank % ranks_per_node; }
};

// The job's shape: ranks_per_node_option (--ranks-per-node) when > 0, else the platform's
// ranks_per_node, capped at the world size (a 2-rank job on an 8-GPU preset is one node of 2).
// The world size must be a multiple of it (an error says which option to change).
Shape shape_of(const Platform& p, int world_size, int ranks_per_node_option);

}  // namespace dplab::cluster
