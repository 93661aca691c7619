// A bad plugin for tests/tools/plugin_cli.sh: it has an ABI version but no
// dplab_plugin_register, so dplab refuses it naming the missing entry point.
#include "dplab/train/config/plugin.h"

extern "C" int dplab_plugin_abi_version() {
  return DPLAB_PLUGIN_ABI_VERSION;
}
