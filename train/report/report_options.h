// The reporting option keys: the trace (train/report/run_trace.cpp), the progress line and
// the step records (train/config/train_settings.cpp). Declared once here.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& report_option_table();

}  // namespace dplab
