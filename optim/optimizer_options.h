// The option keys of the optimizers' own settings (optim = lars, adamw), declared once: the
// structs' defaults (optim/lars.h LARSOptions, optim/adamw.h AdamWOptions) and the readers
// (optim/optimizer_factory.cpp) take them from here. The shared keys (lr, momentum, wd,
// nesterov, dampening) are the training driver's (train/config/config.cpp), each optimizer
// supplying its own defaults for them.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& lars_option_table();
const OptionTable& adamw_option_table();

}  // namespace dplab
