// The parameter arena's weight-decay runs (ParamArena::decay_runs: adjacent segments that share
// the flag) as the multi-tensor optimizer kernels take them (core/kernels/optim.h, OptimRun).
#pragma once
#include <vector>

#include "dplab/core/kernels/optim.h"
#include "dplab/core/param_arena.h"

namespace dplab {

inline std::vector<OptimRun> arena_optim_runs(const ParamArena& arena) {
  std::vector<OptimRun> runs;
  for (const DecayRun& d : arena.decay_runs()) runs.push_back({d.offset, d.numel, d.weight_decay});
  return runs;
}

}  // namespace dplab
