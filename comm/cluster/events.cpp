#include "dplab/comm/cluster/events.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "dplab/comm/cluster/platform.h"
#include "dplab/core/error.h"

namespace dplab::cluster {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a counter-based generator, so a draw depends only on
// (seed, step, rank), never on how many draws came before or in which order ranks made them.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// A uniform number in (0, 1]: the top 53 bits, plus one ulp so that log() never sees 0.
double unit(uint64_t x) {
  return (double((x >> 11) + 1)) * 0x1.0p-53;
}

}  // namespace

double FactorDraw::at(int64_t step, int rank) const {
  if (kind == Kind::constant) return factor;
  const uint64_t a = splitmix64(splitmix64(seed + uint64_t(step)) + uint64_t(rank));
  const double u1 = unit(a);
  if (kind == Kind::uniform) return low + (high - low) * (u1 - 0x1.0p-53);
  // Box-Muller: z = sqrt(-2 ln u1) cos(2 pi u2).
  const double u2 = unit(splitmix64(a));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return std::exp(sigma * z);
}

bool Event::active_at(double t) const {
  if (!from_s) return false;
  return t >= *from_s && (!for_s || t < *from_s + *for_s);
}
bool Event::active_at_step(int64_t step) const {
  return first_step && step >= *first_step && step <= *last_step;
}

void Events::append(const Events& more) {
  list_.insert(list_.end(), more.list_.begin(), more.list_.end());
}

bool Events::has_link_events() const {
  return std::any_of(list_.begin(), list_.end(),
                     [](const Event& e) { return e.kind == EventKind::link; });
}

bool Events::has_fail_events() const {
  return std::any_of(list_.begin(), list_.end(),
                     [](const Event& e) { return e.kind == EventKind::fail; });
}

void Events::check_against(const Shape& shape) const {
  for (const Event& e : list_) {
    for (int r : e.ranks)
      DPLAB_CHECK(r >= 0 && r < shape.world(), "{}: rank {} is not a rank of this job ({} ranks)",
                  e.where, r, shape.world());
    for (int n : e.nodes)
      DPLAB_CHECK(n >= 0 && n < shape.nodes,
                  "{}: node {} is not a node of this job ({} nodes of {} ranks)", e.where, n,
                  shape.nodes, shape.ranks_per_node);
  }
}

double Events::compute_factor(int rank, int node, int64_t step, double t) const {
  double f = 1.0;
  for (const Event& e : list_) {
    if (e.kind != EventKind::slow) continue;
    const bool mine = std::find(e.ranks.begin(), e.ranks.end(), rank) != e.ranks.end() ||
                      std::find(e.nodes.begin(), e.nodes.end(), node) != e.nodes.end();
    if (mine && (e.active_at(t) || e.active_at_step(step))) f *= e.factor.at(step, rank);
  }
  return f;
}

LinkFactor Events::interface_at(int node, double t) const {
  LinkFactor f;
  for (const Event& e : list_) {
    if (e.kind != EventKind::link || !e.active_at(t)) continue;
    if (e.fabric || std::find(e.nodes.begin(), e.nodes.end(), node) != e.nodes.end()) {
      f.bandwidth *= e.bandwidth;
      f.latency *= e.latency;
    }
  }
  return f;
}

LinkFactor Events::path_at(const std::vector<int>& nodes, double t) const {
  LinkFactor f;
  bool first = true;
  for (int n : nodes) {
    const LinkFactor g = interface_at(n, t);
    f.bandwidth = first ? g.bandwidth : std::min(f.bandwidth, g.bandwidth);
    f.latency = first ? g.latency : std::max(f.latency, g.latency);
    first = false;
  }
  return f;
}

const Event* Events::failure_of(int rank, int node, int64_t step, double t) const {
  for (const Event& e : list_) {
    if (e.kind != EventKind::fail) continue;
    const bool mine = std::find(e.ranks.begin(), e.ranks.end(), rank) != e.ranks.end() ||
                      std::find(e.nodes.begin(), e.nodes.end(), node) != e.nodes.end();
    if (mine && (e.active_at(t) || e.active_at_step(step))) return &e;
  }
  return nullptr;
}

std::vector<int> Events::down_ranks(const Shape& shape, int64_t step, double t) const {
  std::vector<int> down;
  if (!has_fail_events()) return down;
  for (int r = 0; r < shape.world(); ++r)
    if (failure_of(r, shape.node_of(r), step, t)) down.push_back(r);
  return down;
}

std::string describe(const Event& e) {
  std::string who;
  if (e.fabric) who = "every interface";
  if (!e.ranks.empty()) who = fmt::format("ranks {}", e.ranks);
  if (!e.nodes.empty())
    who += fmt::format("{}nodes {}{}", who.empty() ? "" : ", ", e.nodes,
                       e.kind == EventKind::link ? "' interfaces" : "");
  std::string when;
  if (e.from_s)
    when = e.for_s ? fmt::format("from {:g} s for {:g} s of virtual time", *e.from_s, *e.for_s)
                   : fmt::format("from {:g} s of virtual time on", *e.from_s);
  else
    when = fmt::format("steps {}..{}", *e.first_step, *e.last_step);
  if (e.kind == EventKind::fail) {
    std::string back;
    if (e.from_s)
      back = e.for_s ? fmt::format("; back at the first step from {:g} s", *e.from_s + *e.for_s)
                     : std::string("; never back");
    else
      back = fmt::format("; back at step {}", *e.last_step + 1);
    return fmt::format("fail: {} down {}{}", who, e.from_s ? when : fmt::format("for {}", when),
                       back);
  }
  if (e.kind == EventKind::link)
    return fmt::format("link: bandwidth x{:g}, latency x{:g} on {} {}", e.bandwidth, e.latency, who,
                       when);
  std::string f;
  switch (e.factor.kind) {
    case FactorDraw::Kind::constant:
      f = fmt::format("x{:g}", e.factor.factor);
      break;
    case FactorDraw::Kind::uniform:
      f = fmt::format("x uniform[{:g}, {:g}) per step (seed {})", e.factor.low, e.factor.high,
                      e.factor.seed);
      break;
    case FactorDraw::Kind::lognormal:
      f = fmt::format("x lognormal(sigma {:g}) per step (seed {})", e.factor.sigma, e.factor.seed);
      break;
  }
  return fmt::format("slow: compute {} for {} {}", f, who, when);
}

}  // namespace dplab::cluster
