// A bad plugin for tests/tools/plugin_cli.sh: built for another plugin ABI version, so dplab
// refuses it before calling dplab_plugin_register (which would register "never_registered").
#include "dplab/train/config/plugin.h"

extern "C" int dplab_plugin_abi_version() {
  return DPLAB_PLUGIN_ABI_VERSION + 1;
}

extern "C" void dplab_plugin_register(dplab::Registry& registry) {
  registry.add(dplab::StrategyEntry{
      "never_registered", "refused by its ABI version", {}, [](auto, const dplab::Options&) {
        return std::unique_ptr<dplab::Strategy>();
      }});
}
