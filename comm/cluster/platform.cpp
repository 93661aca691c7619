#include "dplab/comm/cluster/platform.h"
#include "dplab/core/usage_error.h"

#include <algorithm>
#include <cmath>

#include "dplab/core/error.h"

namespace dplab::cluster {

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::auto_:
      return "auto";
    case Algorithm::ring:
      return "ring";
    case Algorithm::tree:
      return "tree";
    case Algorithm::hierarchical:
      return "hierarchical";
  }
  return "?";
}

Algorithm parse_algorithm(const std::string& text, const std::string& what) {
  for (Algorithm a : {Algorithm::auto_, Algorithm::ring, Algorithm::tree, Algorithm::hierarchical})
    if (text == algorithm_name(a)) return a;
  DPLAB_FAIL("{}: expected one of auto, ring, tree, hierarchical, got '{}'", what, text);
}

double Platform::nic_rate(int sharing) const {
  return nic.rate() / (std::max(sharing, 1) * oversubscription);
}

namespace {

void check_link(const Link& l, const std::string& where, const char* key) {
  DPLAB_CHECK(l.latency_s >= 0 && std::isfinite(l.latency_s),
              "{}: {}.latency: expected a latency >= 0, got {} s", where, key, l.latency_s);
  // +infinity is a free link (link_platform: a link.* class left unset); files and presets
  // cannot write it (parse_bandwidth takes finite numbers only).
  DPLAB_CHECK(l.bandwidth_Bps > 0 && !std::isnan(l.bandwidth_Bps),
              "{}: {}.bandwidth: expected a positive bandwidth, got {} B/s", where, key,
              l.bandwidth_Bps);
  DPLAB_CHECK(l.efficiency > 0 && l.efficiency <= 1,
              "{}: {}.efficiency: expected a fraction in (0, 1], got {}", where, key, l.efficiency);
}

}  // namespace

void Platform::validate(const std::string& where) const {
  DPLAB_CHECK(!name.empty(), "{}: name: expected a non-empty name", where);
  DPLAB_CHECK(ranks_per_node >= 1, "{}: ranks_per_node: expected an integer >= 1, got {}", where,
              ranks_per_node);
  check_link(intra, where, "intra");
  check_link(nic, where, "network");
  DPLAB_CHECK(nics >= 1, "{}: network.nics: expected an integer >= 1, got {}", where, nics);
  DPLAB_CHECK(oversubscription >= 1 && std::isfinite(oversubscription),
              "{}: oversubscription: expected a number >= 1 (1 = non-blocking), got {}", where,
              oversubscription);
  DPLAB_CHECK(compute_scale > 0 && std::isfinite(compute_scale),
              "{}: compute_scale: expected a positive number, got {}", where, compute_scale);
}

Shape shape_of(const Platform& p, int world_size, int ranks_per_node_option) {
  DPLAB_CHECK(world_size >= 1, "cluster {}: world size must be >= 1, got {}", p.name, world_size);
  DPLAB_CHECK_OPTION(ranks_per_node_option >= 0,
                     "option ranks_per_node: expected an integer >= 0, got {}",
                     ranks_per_node_option);
  Shape s;
  s.ranks_per_node =
      ranks_per_node_option > 0 ? ranks_per_node_option : std::min(p.ranks_per_node, world_size);
  DPLAB_CHECK(
      world_size % s.ranks_per_node == 0,
      "cluster {}: {} ranks do not fill nodes of {} ranks ({}); give --ranks-per-node "
      "a divisor of the world size or run a multiple of it",
      p.name, world_size, s.ranks_per_node,
      ranks_per_node_option > 0 ? "option ranks_per_node" : "the platform's ranks_per_node");
  s.nodes = world_size / s.ranks_per_node;
  return s;
}

}  // namespace dplab::cluster
