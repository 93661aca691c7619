#include "dplab/comm/cluster/platform_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/comm/cluster/bus_bandwidth.h"
#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/comm/cluster/units.h"

namespace dplab::cluster {

namespace {

std::string link_text(const Link& l) {
  std::string s = fmt::format("latency {}, {} per direction", format_latency(l.latency_s),
                              format_bandwidth(l.bandwidth_Bps));
  if (l.efficiency < 1)
    s += fmt::format(" x efficiency {:g} = {:g} GB/s", l.efficiency, l.rate() / 1e9);
  return s;
}

std::string time_text(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

}  // namespace

std::string platform_summary(const Platform& p) {
  const std::string rpn =
      p.ranks_per_node >= (1 << 20) ? "all ranks" : fmt::format("{}", p.ranks_per_node);
  return fmt::format("{:<12} {} per node; intra {} GB/s; network {} x {:g} Gbit/s", p.name, rpn,
                     fmt::format("{:g}", p.intra.rate() / 1e9), p.nics,
                     p.nic.bandwidth_Bps * 8 / 1e9);
}

std::string platform_details(const Platform& p) {
  std::string s = fmt::format("{}\n  {}\n", p.name, p.description);
  s += fmt::format("  ranks per node    {}\n",
                   p.ranks_per_node >= (1 << 20)
                       ? std::string("all (one node)")
                       : fmt::format("{} (--ranks-per-node overrides)", p.ranks_per_node));
  s += fmt::format("  intra-node link   {}\n", link_text(p.intra));
  s += fmt::format("  network interface {}; {} per node (local rank % {})\n", link_text(p.nic),
                   p.nics, p.nics);
  s += fmt::format("  oversubscription  {:g}\n", p.oversubscription);
  s += fmt::format("  compute_scale     {:g}\n", p.compute_scale);
  s += fmt::format("  collectives       {}\n", algorithm_name(p.algorithm));
  s += "  sources\n";
  for (const auto& src : p.sources) s += fmt::format("    - {}\n", src);
  // What the model predicts: one full node, and two nodes when the preset has nodes of > 1.
  const int rpn = std::min(p.ranks_per_node, 8);
  s += "  allreduce (model)  ranks  nodes  size      algorithm     time        busbw\n";
  for (int nodes : {1, 2}) {
    const Group g{nodes, rpn, 1};
    if (g.size() < 2) continue;
    for (double bytes : {1048576.0, 67108864.0, 1073741824.0}) {
      const Algorithm a = resolve_algorithm(p, Op::allreduce, g, bytes, p.algorithm);
      const double t = collective_time(p, Op::allreduce, g, bytes);
      s +=
          fmt::format("                     {:>5}  {:>5}  {:>4} MiB  {:<12}  {:>10}  {:.1f} GB/s\n",
                      g.size(), nodes, bytes / 1048576, algorithm_name(a), time_text(t),
                      bus_bandwidth(Op::allreduce, g.size(), bytes, t) / 1e9);
    }
  }
  return s;
}

}  // namespace dplab::cluster
