// A bad plugin for tests/tools/plugin_cli.sh: it registers algorithm "allreduce", a built-in
// name, so dplab refuses it (Registry::add: the name is already registered).
#include "dplab/train/config/plugin.h"

extern "C" int dplab_plugin_abi_version() {
  return DPLAB_PLUGIN_ABI_VERSION;
}

extern "C" void dplab_plugin_register(dplab::Registry& registry) {
  registry.add(
      dplab::StrategyEntry{"allreduce", "a second allreduce", {}, [](auto, const dplab::Options&) {
                             return std::unique_ptr<dplab::Strategy>();
                           }});
}
