// The flags of `dplab train` (tools/dplab/cmd_train.cpp), each a shorthand for one option key,
// in one table so that an experiment binary (train/loop/experiment_main.h) takes the same
// flags beside its KEY=VALUE arguments: `./exp --threads 1` is `./exp threads=1`.
#pragma once
#include <string>
#include <vector>

#include "dplab/core/options.h"

namespace dplab {

struct TrainFlag {
  std::string names;  // CLI11's form: "--batch,--batch-size" (the first is the one shown)
  std::string key;    // the option key it sets
  // A switch takes no value and sets `key` to `value` (--trace: trace = true); the others take
  // one (--threads 1, --threads=1).
  bool is_switch = false;
  std::string value;
};

// Every flag of `dplab train` that sets an option key, in its --help order.
const std::vector<TrainFlag>& train_flags();

// The names of the flag that sets `key` ("--threads"); throws dplab::Error when none does.
const std::string& train_flag_names(const std::string& key);

// An experiment binary's arguments, in order, into `opt` (later arguments win): KEY=VALUE,
// --set KEY=VALUE (as dplab train), and dplab train's flags (--threads 1, --threads=1, --trace,
// --no-nesterov). Anything else is a dplab::UsageError naming the argument and the accepted
// forms; `program` names the binary in it.
void apply_experiment_args(const std::vector<std::string>& args, Options& opt,
                           const std::string& program);

}  // namespace dplab
