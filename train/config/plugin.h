// The entry point of a dplab plugin: a shared library that `dplab train --plugin LIB.so` (or the
// option plugins) loads to add models, datasets, algorithms, optimizers and lr schedules to the
// command's registry (train/config/registry.h). A plugin defines both functions below with C
// linkage, links the dplab shared libraries it uses (dplab::dplab; never a static copy), and is
// built as a MODULE library:
//
//   #include "dplab/train/config/plugin.h"
//   extern "C" int dplab_plugin_abi_version() { return DPLAB_PLUGIN_ABI_VERSION; }
//   extern "C" void dplab_plugin_register(dplab::Registry& r) {
//     r.add(dplab::StrategyEntry{"topk", "top-k gradients", {"topk.ratio"}, make_topk});
//   }
//
// The ABI rule: dplab loads a plugin only when dplab_plugin_abi_version() returns the
// DPLAB_PLUGIN_ABI_VERSION dplab was built with. The number changes whenever Registry, its
// entry types or anything they hand to a factory changes layout; a plugin is rebuilt against
// the dplab that loads it. A name the registry already has (built in or another plugin's) is
// refused, as Registry::add refuses it. Loader: train/config/plugin_loader.h.
#pragma once

#include "dplab/train/config/registry.h"

// 2: StrategyEntry gained `exchanges` and `run_note` (the algorithm's declaration, issue #35).
#define DPLAB_PLUGIN_ABI_VERSION 2

// The symbols dplab looks up (dlsym) in a plugin.
#define DPLAB_PLUGIN_ABI_SYMBOL "dplab_plugin_abi_version"
#define DPLAB_PLUGIN_REGISTER_SYMBOL "dplab_plugin_register"

extern "C" {
// DPLAB_PLUGIN_ABI_VERSION, as the plugin was compiled.
int dplab_plugin_abi_version();
// Adds the plugin's entries to `registry` (Registry::add, add_model). Throwing refuses the
// plugin, with the exception's message.
void dplab_plugin_register(dplab::Registry& registry);
}
