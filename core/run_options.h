// The run's keys every layer reads: its seed (weights, data order and every other random
// stream: a run is a pure function of its config; comm's random choices too: PowerSGD's Q,
// Crossover's topology stream) and its length in epochs (what the algorithms and schedules plan
// from: DC-S3GD's warm-up note, DASO's cool-down, hybrid's stages). Declared once here, in the
// lowest layer.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& run_option_table();

}  // namespace dplab
