// Algorithm topk as a dplab plugin: `mpiexec -n 2 dplab train --plugin libtopk_plugin.so --algo
// topk ...` trains it with the `dplab` command instead of an experiment binary of its own
// (main.cpp). The entry points are train/config/plugin.h's; the plugin links the dplab shared
// libraries and holds no copy of them.
#include "dplab/train/config/plugin.h"
#include "topk_entry.h"

extern "C" int dplab_plugin_abi_version() {
  return DPLAB_PLUGIN_ABI_VERSION;
}

extern "C" void dplab_plugin_register(dplab::Registry& registry) {
  registry.add(topk_entry());
}
