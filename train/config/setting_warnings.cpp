#include "dplab/train/config/setting_warnings.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

namespace dplab {
namespace {

// The value `opt` holds for `key`, or "" (no read, so no key is marked used).
std::string value_of(const Options& opt, const std::string& key) {
  auto it = opt.values().find(key);
  return it == opt.values().end() ? "" : it->second;
}

int64_t int_of(const Options& opt, const std::string& key) {
  const std::string s = value_of(opt, key);
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);  // checked elsewhere; 0 when unset
  return v;
}

}  // namespace

std::vector<std::string> ineffective_settings(const Options& opt, const RunShape& shape) {
  std::vector<std::string> w;
  const int64_t rpn = int_of(opt, "ranks_per_node");
  // One node: virtual nodes of at least the world's size, or (without them) every rank on
  // this host.
  const bool one_node = rpn > 0 ? rpn >= shape.world_size : shape.local_ranks >= shape.world_size;
  const std::string nodes =
      rpn > 0 ? fmt::format("ranks_per_node = {} with {} rank{}", rpn, shape.world_size,
                            shape.world_size == 1 ? "" : "s")
              : fmt::format("all {} rank{} on one host and ranks_per_node not set",
                            shape.world_size, shape.world_size == 1 ? "" : "s");
  const std::string inter = value_of(opt, "link.inter");
  if (one_node && !inter.empty() && inter != "off")
    w.push_back(
        fmt::format("warning: link.inter = {} does nothing: every rank is on one node ({}); set "
                    "--ranks-per-node N for virtual nodes",
                    inter, nodes));
  const std::string intra = value_of(opt, "link.intra");
  if (shape.world_size == 1 && !intra.empty() && intra != "off")
    w.push_back(fmt::format("warning: link.intra = {} does nothing in a run of one rank", intra));
  const int64_t threads = int_of(opt, "threads");
  // On a virtual cluster oversubscription is expected (dozens of ranks on a few cores) and does
  // not change the figures: measured compute is each rank's thread CPU time.
  const std::string cluster = value_of(opt, "cluster");
  const bool virtual_cluster =
      (!cluster.empty() && cluster != "off") || (!inter.empty() && inter != "off") ||
      (!value_of(opt, "link.intra").empty() && value_of(opt, "link.intra") != "off");
  if (threads > 0 && threads * shape.local_ranks > shape.cores && !virtual_cluster)
    w.push_back(
        fmt::format("warning: threads = {} x {} rank{} on this host = {} threads on {} cores: "
                    "oversubscribed (0: the cores divided among the ranks)",
                    threads, shape.local_ranks, shape.local_ranks == 1 ? "" : "s",
                    threads * shape.local_ranks, shape.cores));
  // Measured virtual compute is thread CPU time, which contention for caches and cores inflates:
  // an 8-rank gpu4-25gbe run gave a 37% longer virtual epoch at load 6.7 on 2 cores than on a
  // quiet host (docs/virtual_cluster.md, "Measured compute"). A profile is load-proof.
  const std::string compute = value_of(opt, "cluster.compute");
  if (virtual_cluster && (compute.empty() || compute == "measured") && shape.load > shape.cores)
    w.push_back(fmt::format(
        "warning: cluster.compute = measured on a loaded host (1-minute load average {:.1f} on {} "
        "core{}): thread CPU time grows with contention, so these virtual times depend on the "
        "load; for load-proof times record a profile (dplab bench train --profile-out FILE) and "
        "set cluster.compute = profile:FILE",
        shape.load, shape.cores, shape.cores == 1 ? "" : "s"));
  return w;
}

double host_load_average() {
  double load = 0;
  return getloadavg(&load, 1) == 1 ? load : 0.0;
}

std::string batch_warning(int64_t batch, int64_t rank_samples) {
  if (batch <= rank_samples) return "";
  return fmt::format(
      "warning: batch = {} is larger than the {} training samples each rank has per epoch: "
      "every step is one batch of {}",
      batch, rank_samples, rank_samples);
}

}  // namespace dplab
