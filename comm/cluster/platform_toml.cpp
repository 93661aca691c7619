#include "dplab/comm/cluster/platform_toml.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <set>

#include "dplab/comm/cluster/events_toml.h"
#include "dplab/comm/cluster/toml_reader.h"
#include "dplab/comm/cluster/units.h"
#include "dplab/core/error.h"

namespace dplab::cluster {

namespace {

using toml_read::type_name;

// A cluster file is a dozen lines; anything this large is not one.
constexpr size_t kMaxBytes = 64 * 1024;

struct Reader : toml_read::Reader {
  void link(const toml::node& n, const std::string& section, Link& out, int* nics) const {
    auto t = n.as_table();
    DPLAB_CHECK(t, "{}: expected a table ([{}]), got {}", where(n, section), section, type_name(n));
    bool has_lat = false, has_bw = false;
    for (auto&& [k, v] : *t) {
      const std::string key = section + "." + std::string(k.str());
      if (k == "latency") {
        out.latency_s =
            parse_latency(string(v, key, "a latency string such as '5us'"), where(v, key));
        has_lat = true;
      } else if (k == "bandwidth") {
        out.bandwidth_Bps = parse_bandwidth(
            string(v, key, "a bandwidth string such as '400Gbit/s'"), where(v, key));
        has_bw = true;
      } else if (k == "efficiency") {
        out.efficiency = number(v, key, "a fraction in (0, 1]");
        DPLAB_CHECK(out.efficiency > 0 && out.efficiency <= 1,
                    "{}: expected a fraction in (0, 1], got {}", where(v, key), out.efficiency);
      } else if (k == "nics" && nics) {
        *nics = integer(v, key, "an integer >= 1");
      } else {
        DPLAB_FAIL("{}: unknown key; [{}] takes latency, bandwidth, efficiency{}", where(v, key),
                   section, nics ? ", nics" : "");
      }
    }
    DPLAB_CHECK(has_lat && has_bw, "{}: [{}] needs both latency and bandwidth (missing {})", path,
                section, has_lat ? "bandwidth" : "latency");
  }
};

}  // namespace

Platform parse_platform_toml(std::string_view text, const std::string& path) {
  const toml::table t = toml_read::parse_small_toml(text, path, kMaxBytes, "cluster file");
  Reader r{{path}};
  Platform p;
  bool has_intra = false, has_network = false;
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (key == "name") {
      p.name = r.string(v, key, "a string");
    } else if (key == "description") {
      p.description = r.string(v, key, "a string");
    } else if (key == "ranks_per_node") {
      p.ranks_per_node = r.integer(v, key, "an integer >= 1");
    } else if (key == "oversubscription") {
      p.oversubscription = r.number(v, key, "a number >= 1");
    } else if (key == "compute_scale") {
      p.compute_scale = r.number(v, key, "a positive number");
    } else if (key == "algorithm") {
      p.algorithm = parse_algorithm(r.string(v, key, "a string"), r.where(v, key));
    } else if (key == "sources") {
      auto a = v.as_array();
      DPLAB_CHECK(a, "{}: expected an array of strings, got {}", r.where(v, key), type_name(v));
      for (size_t i = 0; i < a->size(); ++i)
        p.sources.push_back(r.string(*a->get(i), fmt::format("sources[{}]", i), "a string"));
    } else if (key == "intra") {
      r.link(v, "intra", p.intra, nullptr);
      has_intra = true;
    } else if (key == "network") {
      r.link(v, "network", p.nic, &p.nics);
      has_network = true;
    } else if (key == "event") {
      p.events = read_events(v, path);
    } else {
      DPLAB_FAIL(
          "{}: unknown key; a cluster file takes name, description, ranks_per_node, "
          "oversubscription, compute_scale, algorithm, sources, [intra], [network], [[event]]",
          r.where(v, key));
    }
  }
  DPLAB_CHECK(!p.name.empty(), "{}: key 'name': missing (a cluster file must name itself)", path);
  DPLAB_CHECK(has_intra,
              "{}: table [intra] missing (latency and bandwidth between the ranks of "
              "a node)",
              path);
  DPLAB_CHECK(has_network,
              "{}: table [network] missing (latency and bandwidth of a node's "
              "interface)",
              path);
  p.validate(path);
  return p;
}

Platform load_platform_file(const std::string& path) {
  return parse_platform_toml(toml_read::read_small_file(path, kMaxBytes, "cluster file"), path);
}

}  // namespace dplab::cluster
