// The built-in algorithms' option keys. Each algorithm declares its own in
// comm/algorithms/<name>_options.cpp (key, default, range or choices, help), beside the
// from_options in <name>.cpp that reads them through the table; builtin_algorithm_options()
// lists what each algorithm reads, in the order `dplab train --help` shows them. The training
// driver takes its algorithm keys from here and names no algorithm itself.
#pragma once
#include <string>
#include <vector>

#include "dplab/core/option_decl.h"

namespace dplab {

const OptionTable& allreduce_option_table();
const OptionTable& hybrid_option_table();
const OptionTable& daso_option_table();
const OptionTable& dcs3gd_option_table();
const OptionTable& crossover_option_table();
const OptionTable& sgp_option_table();
const OptionTable& oscars_option_table();
const OptionTable& local_sgd_option_table();
const OptionTable& post_local_sgd_option_table();  // post_local_sgd.* only
const OptionTable& diloco_option_table();
const OptionTable& slowmo_option_table();
const OptionTable& streaming_diloco_option_table();

struct AlgorithmOptions {
  std::string name;     // the value of option algo
  OptionTable options;  // every key a run of it reads: its own, then GradSync's under a prefix
};
// Every built-in algorithm but local (which reads none), in help order.
const std::vector<AlgorithmOptions>& builtin_algorithm_options();

}  // namespace dplab
