// The keys of a training run on a virtual cluster that the driver reads itself (the cluster's
// own, read by the communicator: comm/comm_options.h): loading in virtual time and what a
// failure does to the down ranks' data. Declared once here; virtual_run.cpp reads through it.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& virtual_run_option_table();

}  // namespace dplab
