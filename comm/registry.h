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
// What the training driver knows of a built-in algorithm, declared with it here: the driver
// (train/config/builtin_registry.cpp) builds its registry entries from these and names no
// algorithm itself.
struct AlgorithmInfo {
  std::string name;  // the value of option algo
  std::string help;
  // Every step's update is the optimizer's step on the gradient averaged over the ranks (or the
  // rank's own): summing micro-batch gradients (accumulate_steps) commutes with it.
  bool averages_gradients = false;
  bool single_process = false;  // one process, no Topology
  // What it exchanges instead of gradients through GradSync (said when a run of it is given a
  // gradient-compression key); "" for those that average gradients through GradSync.
  std::string exchanges = {};
  // A line for the run header from the options, the global batch and the base lr, or null.
  std::string (*run_note)(const Options& opt, int64_t global_batch, double base_lr) = nullptr;
};
const std::vector<AlgorithmInfo>& builtin_algorithms();
// Whether option algo's algorithm runs in one process (no Topology).
bool single_process_strategy(const std::string& algo);
std::vector<std::string> strategy_names();
// The resharding policy of built-in algorithm `algo` for a checkpoint with trajectory options
// `config` (comm/reshard_policy.h); for any other name a refusal saying it has none.
ReshardPolicy builtin_reshard_policy(const std::string& algo, const CheckpointConfig& config);

}  // namespace dplab
