// The run-start line of --algo dcs3gd: the paper's peak lr for this run's global batch and
// warm-up (comm/algorithms/dcs3gd.h, dcs3gd_paper_peak_lr), next to the --lr in use, so a user
// can set --lr to the paper's rule without deriving it.
#pragma once
#include <cstdint>
#include <string>

#include "dplab/core/options.h"

namespace dplab {

// The line (ending in '\n') for a run of `global_batch` samples per step at base lr `lr` (option
// lr, or the optimizer's default); the warm-up fraction is dcs3gd.warmup_epochs / epochs when
// that option is >= 0, else dcs3gd.warmup_frac.
std::string dcs3gd_run_note(const Options& opt, int64_t global_batch, double lr);

}  // namespace dplab
