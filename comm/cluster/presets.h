// The built-in platforms (`dplab cluster list`). Their figures and sources are in presets.cpp
// and docs/virtual_cluster.md ("Presets" and "Validation").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

const std::vector<Platform>& presets();
std::optional<Platform> find_preset(const std::string& name);

// `--cluster PRESET|FILE`: a preset by name, else a TOML file (platform_toml.h). An unknown
// name that is not a file lists the presets.
Platform resolve_platform(const std::string& preset_or_file);

}  // namespace dplab::cluster
