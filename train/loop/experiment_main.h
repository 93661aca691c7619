// The main() of an experiment binary in one call: the command line (KEY=VALUE option keys, as
// `dplab train --set`, and dplab train's flags: train/config/train_flags.h), --help listing the
// experiment's registry, value checks against that registry, run_training, and the exit codes of
// `dplab train` (0 done, 1 runtime error, 2 usage error, 3 non-finite stop, 4 pre-empted).
//
//   int main(int argc, char** argv) {
//     Registry r = Registry::with_builtins();
//     r.add(StrategyEntry{"topk", "top-k with error feedback", {"topk.ratio"}, make_topk});  //
//     make_topk(topo, options) Options defaults; defaults.set("algo", "topk"); return
//     experiment_main(argc, argv, r, {"topk_algo", "what it shows", defaults});
//   }
#pragma once
#include <string>

#include "dplab/core/options.h"
#include "dplab/train/config/registry.h"

namespace dplab {

struct Experiment {
  std::string name;   // the binary's name: "NAME: error: ..." and the usage line
  std::string about;  // what the experiment shows, printed by --help
  Options defaults;   // option values the command line's KEY=VALUE arguments override
};

// Starts MPI under a launcher (comm/mpi_env.h), reads argv, and trains with `registry`. Rank 0
// warns about settings that do nothing (train/config/setting_warnings.h) and prints "test
// accuracy: A" at the end. --help (or -h) prints the usage, `about`, and the
// registry's names with their help and keys (train/config/registry_help.h), then returns 0.
int experiment_main(int argc, char** argv, const Registry& registry, const Experiment& exp);

}  // namespace dplab
