// The data's option keys: the data set and its decoding (read by the data sets'
// factories, train/config/builtin_datasets.cpp), the loader (train/data/data_pipeline.cpp) and
// evaluation's batch (train/loop/trainer.cpp). Declared once here.
#pragma once
#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& data_option_table();

}  // namespace dplab
