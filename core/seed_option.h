// The run's seed (option seed): weights, data order and every other random stream of a run
// (a run is a pure function of its config). Declared once here, in the lowest layer, because
// every layer reads it: the training driver, and comm's random choices (PowerSGD's Q,
// Crossover's topology stream).
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& seed_option_table();

}  // namespace dplab
