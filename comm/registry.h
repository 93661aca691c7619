// Strategy factory: the `dplab` command and experiment binaries pick the distributed algorithm
// by name (option "algo"). "local" is the single-process loop; the distributed ones
// ("allreduce", "hybrid", "daso", ...) initialise MPI and the Topology from the options.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/comm/strategy.h"
#include "dplab/core/options.h"

namespace dplab {

std::unique_ptr<Strategy> make_strategy(const Options& opt);
std::vector<std::string> strategy_names();

}  // namespace dplab
