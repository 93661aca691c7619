// Settings that do nothing, or do not do what they promise, in the run at hand: accepted (a
// config file may serve several set-ups) but reported once, on rank 0, to stderr, so a study
// does not silently measure something else than it meant to: link emulation or DASO on a
// single node, more OpenMP threads than cores, a batch larger than a rank's share of the data,
// measured virtual compute on a loaded host.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/core/options.h"

namespace dplab {

struct RunShape {
  int world_size = 1;   // ranks of the run
  int local_ranks = 1;  // ranks on this host
  int cores = 1;        // cores of this host
  double load = 0;      // the host's 1-minute load average when the run starts (getloadavg)
};

// One "warning: ..." line per ineffective setting among `opt`'s values (read without marking
// them used): link.intra / link.inter or algo = daso when every rank is on one (virtual) node;
// threads x local ranks above the cores; a virtual cluster timing measured compute on a host
// whose load average exceeds its cores (thread CPU time then grows with the contention).
std::vector<std::string> ineffective_settings(const Options& opt, const RunShape& shape);
// "warning: ..." when `batch` exceeds `rank_samples`, the samples one rank sees per epoch
// (every step is then one short batch); "" otherwise.
std::string batch_warning(int64_t batch, int64_t rank_samples);
// This host's 1-minute load average (getloadavg), 0 when unknown: RunShape::load.
double host_load_average();

}  // namespace dplab
