// Strategy factory: the `dplab` command and experiment binaries pick the distributed algorithm
// by name (option "algo"). "local" is the single-process loop; the distributed ones
// ("allreduce", "hybrid", "daso", ...) run on the Topology their caller built (the training
// driver builds it once, with the run's virtual clock under a cluster: Topology::from_options).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/comm/reshard_policy.h"
#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"
#include "dplab/core/options.h"

namespace dplab {

// `topo`: the ranks the algorithm runs on; may be null for "local" only.
std::unique_ptr<Strategy> make_strategy(std::shared_ptr<Topology> topo, const Options& opt);
// Builds the Topology from the options (MPI initialised, no virtual clock) unless algo is
// "local" (tests and tools that run an algorithm outside the driver).
std::unique_ptr<Strategy> make_strategy(const Options& opt);
// Whether option algo's algorithm runs in one process (no Topology).
bool single_process_strategy(const std::string& algo);
std::vector<std::string> strategy_names();
// The resharding policy of built-in algorithm `algo` for a checkpoint with trajectory options
// `config` (comm/reshard_policy.h); for any other name a refusal saying it has none.
ReshardPolicy builtin_reshard_policy(const std::string& algo, const CheckpointConfig& config);

}  // namespace dplab
