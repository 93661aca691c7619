// The option keys of a run's output directory, checkpoints, resume and pre-emption, read by
// train/config/train_settings.cpp (the loop's checkpoint policy), train/state/ and
// train/report/run_record.cpp. Declared once here.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& checkpoint_option_table();

}  // namespace dplab
