// What it shows: a decentralised algorithm (D-PSGD on a ring, dpsgd_strategy.h) written outside
// the library against its communication meter, chosen with algo=dpsgd and trained by the full
// driver: its gossip overlaps the next step, shows in dplab trace as "dpsgd exchange" and in
// metrics.jsonl's comm_* (payload and wire bytes, messages), the consensus model is evaluated
// as the run's model (test_acc) beside rank 0's own (test_acc_rank0), and a resumed run is bitwise
// the uninterrupted one.
//
//   mpiexec -n 4 ./dpsgd epochs=2 out=runs/dpsgd trace=true
//   ./dpsgd --help          the registry's names, dpsgd among the algorithms
#include "dplab/train/loop/experiment_main.h"
#include "dpsgd_strategy.h"

int main(int argc, char** argv) {
  using namespace dplab;
  Registry registry = Registry::with_builtins();
  registry.add(StrategyEntry{
      "dpsgd",
      "D-PSGD (Lian et al. 2017) on a ring: each step mixes the model with the neighbours' "
      "(exchange overlapped with the next step); W_ii = dpsgd.weight_self [default 0: equal "
      "weights]",
      {"dpsgd.weight_self"},
      [](std::shared_ptr<Topology> topo, const Options& o) {
        return std::make_unique<DpsgdStrategy>(std::move(topo),
                                               o.get_double("dpsgd.weight_self", 0.0));
      }});
  Options defaults;
  defaults.set("algo", "dpsgd");
  defaults.set("model", "mnist_cnn");
  defaults.set("data", "fashion-mnist");
  defaults.set("lr", "0.05");
  return experiment_main(argc, argv, registry,
                         {"dpsgd", "D-PSGD: decentralised SGD on a ring.", defaults});
}
