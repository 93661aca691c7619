#include "dplab/comm/cluster/events_toml.h"

#include <fmt/format.h>

#include <cmath>

#include "dplab/comm/cluster/toml_reader.h"
#include "dplab/core/error.h"

namespace dplab::cluster {

namespace {

using toml_read::type_name;

// An events file is a few dozen lines; anything this large is not one.
constexpr size_t kMaxBytes = 64 * 1024;

struct EventReader : toml_read::Reader {
  std::vector<int> ids(const toml::node& n, const std::string& key) const {
    auto a = n.as_array();
    DPLAB_CHECK(a, "{}: expected an array of integers >= 0, got {}", where(n, key), type_name(n));
    std::vector<int> out;
    for (size_t i = 0; i < a->size(); ++i) {
      auto v = a->get(i)->as_integer();
      DPLAB_CHECK(v && v->get() >= 0 && v->get() < (1 << 24),
                  "{}: expected an array of integers >= 0, element {} is not one", where(n, key),
                  i);
      out.push_back(int(v->get()));
    }
    DPLAB_CHECK(!out.empty(), "{}: expected at least one {}", where(n, key),
                key == "ranks" ? "rank" : "node");
    return out;
  }
  double positive(const toml::node& n, const std::string& key) const {
    const double x = number(n, key, "a positive number");
    DPLAB_CHECK(x > 0 && std::isfinite(x), "{}: expected a positive number, got {}", where(n, key),
                x);
    return x;
  }
  int64_t step(const toml::node& n, const std::string& key) const {
    auto i = n.as_integer();
    DPLAB_CHECK(i && i->get() >= 0, "{}: expected a step number >= 0, got {}", where(n, key),
                i ? fmt::format("{}", i->get()) : type_name(n));
    return i->get();
  }

  Event event(const toml::table& t, const toml::node& at) const {
    Event e;
    e.where = fmt::format("{}:{}: [[event]]", path, at.source().begin.line);
    std::string kind, distribution = "constant";
    bool has_factor = false, has_link_factor = false;
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (key == "kind") {
        kind = string(v, key, "slow, link or fail");
      } else if (key == "ranks") {
        e.ranks = ids(v, key);
      } else if (key == "nodes") {
        e.nodes = ids(v, key);
      } else if (key == "fabric") {
        auto b = v.as_boolean();
        DPLAB_CHECK(b, "{}: expected true or false, got {}", where(v, key), type_name(v));
        e.fabric = b->get();
      } else if (key == "from_s") {
        e.from_s = number(v, key, "a number of virtual seconds >= 0");
        DPLAB_CHECK(*e.from_s >= 0, "{}: expected virtual seconds >= 0, got {}", where(v, key),
                    *e.from_s);
      } else if (key == "for_s") {
        e.for_s = positive(v, key);
      } else if (key == "steps") {
        auto a = v.as_array();
        DPLAB_CHECK(a && a->size() == 2, "{}: expected [FIRST, LAST] (global steps, inclusive)",
                    where(v, key));
        e.first_step = step(*a->get(0), key);
        e.last_step = step(*a->get(1), key);
        DPLAB_CHECK(*e.first_step <= *e.last_step, "{}: first step {} is after last step {}",
                    where(v, key), *e.first_step, *e.last_step);
      } else if (key == "factor") {
        e.factor.factor = positive(v, key);
        has_factor = true;
      } else if (key == "distribution") {
        distribution = string(v, key, "constant, uniform or lognormal");
      } else if (key == "low") {
        e.factor.low = positive(v, key);
      } else if (key == "high") {
        e.factor.high = positive(v, key);
      } else if (key == "sigma") {
        e.factor.sigma = positive(v, key);
      } else if (key == "seed") {
        auto i = v.as_integer();
        DPLAB_CHECK(i && i->get() >= 0, "{}: expected an integer >= 0", where(v, key));
        e.factor.seed = uint64_t(i->get());
      } else if (key == "bandwidth") {
        e.bandwidth = positive(v, key);
        has_link_factor = true;
      } else if (key == "latency") {
        e.latency = positive(v, key);
        has_link_factor = true;
      } else {
        DPLAB_FAIL(
            "{}: unknown key; an event takes kind, ranks, nodes, fabric, from_s, for_s, steps, "
            "factor, distribution, low, high, sigma, seed, bandwidth, latency",
            where(v, key));
      }
    }
    DPLAB_CHECK(kind != "return",
                "{}: kind 'return': a return is the end of its fail event's window: give the "
                "fail event for_s (virtual seconds down) or steps = [FIRST, LAST] (back at LAST + "
                "1)",
                e.where);
    DPLAB_CHECK(kind == "slow" || kind == "link" || kind == "fail",
                "{}: key 'kind': expected slow, link or fail, got '{}'", e.where, kind);
    e.kind = kind == "slow" ? EventKind::slow : kind == "link" ? EventKind::link : EventKind::fail;
    DPLAB_CHECK(e.from_s.has_value() != e.first_step.has_value(),
                "{}: give when as from_s (and for_s) in virtual seconds, or as steps = [FIRST, "
                "LAST]; {}",
                e.where, e.from_s ? "not both" : "neither is given");
    DPLAB_CHECK(!e.for_s || e.from_s, "{}: for_s needs from_s", e.where);
    if (e.kind == EventKind::fail) {
      DPLAB_CHECK(!e.ranks.empty() || !e.nodes.empty(), "{}: a fail event needs ranks or nodes",
                  e.where);
      DPLAB_CHECK(!e.fabric && !has_link_factor && !has_factor && distribution == "constant",
                  "{}: a fail event takes ranks or nodes and when (from_s, for_s or steps) "
                  "only",
                  e.where);
    } else if (e.kind == EventKind::slow) {
      DPLAB_CHECK(!e.ranks.empty() || !e.nodes.empty(), "{}: a slow event needs ranks or nodes",
                  e.where);
      DPLAB_CHECK(!e.fabric && !has_link_factor,
                  "{}: fabric, bandwidth and latency belong to link events", e.where);
      if (distribution == "constant") {
        DPLAB_CHECK(has_factor, "{}: a constant slow event needs factor (e.g. factor = 3)",
                    e.where);
      } else if (distribution == "uniform") {
        e.factor.kind = FactorDraw::Kind::uniform;
        DPLAB_CHECK(!has_factor && e.factor.low < e.factor.high,
                    "{}: a uniform slow event needs low < high (and no factor)", e.where);
      } else if (distribution == "lognormal") {
        e.factor.kind = FactorDraw::Kind::lognormal;
        DPLAB_CHECK(!has_factor && e.factor.sigma > 0,
                    "{}: a lognormal slow event needs sigma > 0 (and no factor)", e.where);
      } else {
        DPLAB_FAIL("{}: key 'distribution': expected constant, uniform or lognormal, got '{}'",
                   e.where, distribution);
      }
    } else {
      DPLAB_CHECK(e.ranks.empty(),
                  "{}: a link event names nodes (their interfaces) or fabric = "
                  "true, not ranks",
                  e.where);
      DPLAB_CHECK(e.fabric != !e.nodes.empty(),
                  "{}: a link event needs nodes or fabric = true "
                  "(one of them)",
                  e.where);
      DPLAB_CHECK(has_link_factor, "{}: a link event needs bandwidth and/or latency factors",
                  e.where);
      DPLAB_CHECK(!e.first_step,
                  "{}: a link event is timed in virtual seconds (from_s, for_s), "
                  "not steps",
                  e.where);
      DPLAB_CHECK(!has_factor && distribution == "constant",
                  "{}: factor and distribution belong to slow events", e.where);
    }
    return e;
  }
};

}  // namespace

Events read_events(const toml::node& tables, const std::string& path) {
  EventReader r{{path}};
  auto a = tables.as_array();
  DPLAB_CHECK(a, "{}: expected [[event]] tables, got {}", r.where(tables, "event"),
              type_name(tables));
  std::vector<Event> list;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::node& n = *a->get(i);
    auto t = n.as_table();
    DPLAB_CHECK(t, "{}: expected [[event]] tables, element {} is {}", r.where(n, "event"), i,
                type_name(n));
    list.push_back(r.event(*t, n));
  }
  return Events(std::move(list));
}

Events parse_events_toml(std::string_view text, const std::string& path) {
  const toml::table t = toml_read::parse_small_toml(text, path, kMaxBytes, "events file");
  Events events;
  for (auto&& [k, v] : t) {
    DPLAB_CHECK(k == "event", "{}:{}: key '{}': unknown key; an events file holds [[event]] tables",
                path, v.source().begin.line, std::string(k.str()));
    events = read_events(v, path);
  }
  return events;
}

Events load_events_file(const std::string& path) {
  return parse_events_toml(toml_read::read_small_file(path, kMaxBytes, "events file"), path);
}

}  // namespace dplab::cluster
