// Platforms as text for `dplab cluster list` / `dplab cluster show`.
#pragma once
#include <string>

#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

// One line: name, nodes' shape, links.
std::string platform_summary(const Platform& p);
// Every field with its effective rate, the sources, and the model's allreduce time and bus
// bandwidth on one and two nodes for a few sizes.
std::string platform_details(const Platform& p);

}  // namespace dplab::cluster
