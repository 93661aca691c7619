#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/comm/comm_options.h"

#include <fmt/format.h>

#include <limits>

#include "dplab/comm/cluster/events_toml.h"
#include "dplab/comm/cluster/presets.h"
#include "dplab/comm/cluster/units.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::cluster {

namespace {

// link.intra / link.inter: nullopt when empty or "off".
std::optional<Link> link_option(const Options& opt, const std::string& key) {
  const std::string v = communicator_option_table().get_string(opt, key);
  if (v.empty() || v == "off") return std::nullopt;
  try {
    return parse_link(v, "option " + key);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());  // a malformed value the user gave: exit status 2
  }
}

}  // namespace

Platform link_platform(const std::optional<Link>& intra, const std::optional<Link>& inter,
                       int ranks_per_node) {
  // A free link: what an unset class cost in the sleep-based emulation this replaces.
  const Link free{0.0, std::numeric_limits<double>::infinity(), 1.0};
  const auto text = [](const std::optional<Link>& l) {
    return l ? fmt::format("{}, {}", format_latency(l->latency_s), format_bandwidth(l->rate()))
             : std::string("free");
  };
  Platform p;
  p.name = "link";
  p.description =
      fmt::format("the link.* shorthand: intra-node link {}; one network interface per node, {}",
                  text(intra), text(inter));
  // shape_of caps this at the world size: without --ranks-per-node every rank is on one node.
  p.ranks_per_node = ranks_per_node > 0 ? ranks_per_node : 1 << 20;
  p.intra = intra.value_or(free);
  p.nic = inter.value_or(free);
  p.nics = 1;
  p.oversubscription = 1.0;
  p.compute_scale = 1.0;
  p.algorithm = Algorithm::ring;
  p.sources = {"options link.intra / link.inter"};
  p.validate("options link.intra / link.inter");
  return p;
}

std::optional<Platform> platform_from_options(const Options& opt) {
  const OptionTable& t = communicator_option_table();
  const std::string name = t.get_string(opt, "cluster");
  const std::optional<Link> intra = link_option(opt, "link.intra");
  const std::optional<Link> inter = link_option(opt, "link.inter");
  const bool named = !name.empty() && name != "off";
  DPLAB_CHECK_OPTION(
      !named || (!intra && !inter),
      "options cluster = '{}' and {}: give one or the other (link.intra / "
      "link.inter are a shorthand for a cluster platform; a cluster file can "
      "hold those links and more)",
      name, intra && inter ? "link.intra / link.inter" : (intra ? "link.intra" : "link.inter"));
  std::optional<Platform> p;
  if (named) {
    try {
      p = resolve_platform(name);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(e.what());  // the option's value names no preset or usable file: exit 2
    }
  } else if (intra || inter)
    p = link_platform(intra, inter, static_cast<int>(t.get_int(opt, "ranks_per_node")));
  DPLAB_CHECK_OPTION(p || t.get_string(opt, "cluster.events").empty(),
                     "option cluster.events: events happen on a virtual cluster; give option "
                     "cluster (or link.intra / link.inter) too");
  if (!p) return std::nullopt;
  // 0: the platform's own scale.
  const double scale = t.get_double(opt, "cluster.compute_scale");
  if (scale > 0) p->compute_scale = scale;
  // Events of a file of their own, after the cluster file's (comm/cluster/events.h).
  const std::string events = t.get_string(opt, "cluster.events");
  if (!events.empty()) p->events.append(load_events_file(events));
  return p;
}

std::string compute_profile_path(const Options& opt) {
  const std::string v = communicator_option_table().get_string(opt, "cluster.compute");
  if (v == "measured") return "";
  const std::string prefix = "profile:";
  DPLAB_CHECK_OPTION(v.rfind(prefix, 0) == 0 && v.size() > prefix.size(),
                     "option cluster.compute: expected 'measured' or 'profile:FILE' (a file "
                     "written by dplab bench train --profile-out), got '{}'",
                     v);
  return v.substr(prefix.size());
}

bool compute_is_profile(const Options& opt) {
  return !compute_profile_path(opt).empty();
}

}  // namespace dplab::cluster
