// Quantities with units as cluster files write them: latencies ("2us", "0.5ms") and per-direction
// bandwidths ("400Gbit/s", "450GB/s"). `what` names the file and key in errors.
#pragma once
#include <string>

#include "dplab/comm/cluster/platform.h"

namespace dplab::cluster {

// Seconds from "N s|ms|us|ns" ("0" alone is allowed).
double parse_latency(const std::string& text, const std::string& what);
// Bytes per second from "N UNIT", UNIT one of B/s KB/s MB/s GB/s (powers of 1000), KiB/s MiB/s
// GiB/s, bit/s Kbit/s Mbit/s Gbit/s; must be positive.
double parse_bandwidth(const std::string& text, const std::string& what);

// A link as the link.intra / link.inter options write it: "LATENCY,BANDWIDTH", e.g.
// "20us,1.25GB/s", "1ms,100MB/s", "0,10Gbit/s" (efficiency 1). `what` names the option.
Link parse_link(const std::string& text, const std::string& what);

// "2 us", "450 GB/s", "50 Gbit/s (6.25 GB/s)": for `dplab cluster show`.
std::string format_latency(double seconds);
std::string format_bandwidth(double bytes_per_s);

}  // namespace dplab::cluster
