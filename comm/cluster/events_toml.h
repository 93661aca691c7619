// Events in a cluster file's [[event]] tables, or in a file of their own (option
// cluster.events = FILE): docs/virtual_cluster.md, "Events".
#pragma once
#include <string>
#include <string_view>

#include "dplab/comm/cluster/events.h"

namespace dplab::cluster {

// A file holding only [[event]] tables; throws naming the file, line and key.
Events parse_events_toml(std::string_view text, const std::string& path);
Events load_events_file(const std::string& path);

}  // namespace dplab::cluster
