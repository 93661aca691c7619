// What it shows: a distributed algorithm written outside the library, chosen with algo=topk and
// trained by the full driver. TopKStrategy (topk_strategy.h, under 100 lines) sends only the
// largest topk.ratio of each rank's gradient, keeps the rest as a residual for the next step
// (error feedback), and uses the library's DistributedStrategy, its communication meter
// (metrics.jsonl's comm_bytes and comm_wire_bytes, a "topk gather" event in dplab trace) and
// StateDict (a resumed run is bitwise the uninterrupted one).
//
//   mpiexec -n 2 ./topk_algo epochs=2 topk.ratio=0.01 out=runs/topk
//   ./topk_algo --help          the registry's names, topk among the algorithms
// The same algorithm as a plugin of the dplab command (topk_plugin.cpp):
//   mpiexec -n 2 dplab train --plugin ./libtopk_plugin.so --algo topk --set topk.ratio=0.01
#include "dplab/train/loop/experiment_main.h"
#include "topk_entry.h"

int main(int argc, char** argv) {
  using namespace dplab;
  Registry registry = Registry::with_builtins();
  registry.add(topk_entry());
  Options defaults;
  defaults.set("algo", "topk");
  defaults.set("model", "mnist_cnn");
  defaults.set("data", "fashion-mnist");
  defaults.set("lr", "0.05");
  defaults.set("momentum", "0.9");
  return experiment_main(argc, argv, registry,
                         {"topk_algo", "Top-k gradient averaging with error feedback.", defaults});
}
