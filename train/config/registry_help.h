// A registry's names as help text: `dplab train --help` and `dplab options` list the built-in
// registry's, an experiment binary's --help its own (train/loop/experiment_main.h), so a name
// an experiment registers shows up with its line of help and the option keys it reads.
#pragma once
#include <string>

#include "dplab/train/config/registry.h"

namespace dplab {

// Under a heading per kind ("algorithms (option algo):"), one line per entry: the name, its
// help and "[keys: ...]". `prefix` selects entries whose name, kind or option starts with it
// ("" for all; "daso", "lr.", "algo"); "" when nothing is selected.
std::string registry_reference(const Registry& registry, const std::string& prefix = "");

}  // namespace dplab
