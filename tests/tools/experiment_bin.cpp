// An experiment binary as docs/experiments.md describes one, for test_experiment_args.cpp: the
// built-in registry plus an algorithm of its own ("own_local": the local loop under another
// name, reading the key own_local.k), through experiment_main.
#include "dplab/train/loop/experiment_main.h"

int main(int argc, char** argv) {
  using namespace dplab;
  Registry registry = Registry::with_builtins();
  const StrategyEntry local = registry.strategy("local");
  StrategyEntry own = local;
  own.name = "own_local";
  own.help = "the local loop, under this program's own name";
  own.keys = {"own_local.k"};
  own.make = [make = local.make](std::shared_ptr<Topology> topo, const Options& opt) {
    (void)opt.get_int("own_local.k", 1);
    Options as_local = opt;  // the built-in factory builds the algorithm that option algo names
    as_local.set("algo", "local");
    return make(std::move(topo), as_local);
  };
  registry.add(own);
  Options defaults;
  defaults.set("model", "mnist_cnn");
  defaults.set("data", "fashion-mnist");
  return experiment_main(argc, argv, registry,
                         {"test_experiment", "an experiment binary for the tests", defaults});
}
