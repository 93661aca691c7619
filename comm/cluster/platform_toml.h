// Custom platforms as TOML files (`--cluster FILE`, `dplab cluster show FILE`). Format, with
// every key (docs/virtual_cluster.md, "Cluster files"):
//
//   name = "my-cluster"            # required
//   description = "..."
//   ranks_per_node = 4             # default 1
//   oversubscription = 1.0         # switch, >= 1
//   compute_scale = 1.0
//   algorithm = "auto"             # auto | ring | tree | hierarchical
//   sources = ["where the figures come from"]
//   [intra]                        # between ranks of a node, per rank and direction
//   latency = "5us"
//   bandwidth = "31.5GB/s"
//   efficiency = 0.8               # default 1
//   [network]                      # one interface of a node, per direction
//   latency = "25us"
//   bandwidth = "25Gbit/s"
//   efficiency = 0.94
//   nics = 1                       # interfaces per node, default 1
//
// Errors name the file, the line, the key and what was expected.
#pragma once
#include <string>
#include <string_view>

#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

Platform load_platform_file(const std::string& path);
// `path` only names the source in errors.
Platform parse_platform_toml(std::string_view text, const std::string& path);

}  // namespace dplab::cluster
