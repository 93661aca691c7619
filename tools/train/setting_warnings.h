// Settings that do nothing in the run at hand: accepted (a config file may serve several
// set-ups) but reported once, on rank 0, to stderr, so a study does not silently measure
// something else than it meant to: link emulation or DASO on a single node, more OpenMP
// threads than cores, a batch larger than a rank's share of the data.
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
};

// One "warning: ..." line per ineffective setting among `opt`'s values (read without marking
// them used): link.intra / link.inter or algo = daso when every rank is on one (virtual) node;
// threads x local ranks above the cores.
std::vector<std::string> ineffective_settings(const Options& opt, const RunShape& shape);
// "warning: ..." when `batch` exceeds `rank_samples`, the samples one rank sees per epoch
// (every step is then one short batch); "" otherwise.
std::string batch_warning(int64_t batch, int64_t rank_samples);

}  // namespace dplab
