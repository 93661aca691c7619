// Events in virtual time (issue #36 item 1, docs/virtual_cluster.md "Events"): stragglers and
// degraded links on a modelled cluster, each applied over a window of virtual time or a range
// of steps. Pure data and pure functions of (event, rank, step, time): a run is deterministic in
// its events and their seeds, whatever the host's load or the order the ranks get there.
//
//  - slow: a compute factor for some ranks or nodes, constant or drawn per (step, rank) from a
//    named distribution with its own seed. The training driver multiplies the step's compute
//    (measured or replayed) by the product of the factors that apply when the step begins.
//  - link: a factor on the bandwidth and/or the latency of some nodes' network interfaces or of
//    every interface (the fabric). A transfer between nodes a and b runs at the slower of the two
//    interfaces and pays the larger latency; a collective spanning several nodes is limited by
//    its slowest member's interface (a ring's bottleneck), all taken when it starts (messages:
//    when the sender posts).
//
//  - fail: some ranks or nodes are down over a window of virtual time or a range of steps, and
//    back (returned) after it. A rank is down for a global step when the step begins inside the
//    window, on the world's clock: the latest of the ranks' virtual clocks at the step's start,
//    which the ranks agree on (train/virtual/liveness.h). So a rank fails at the first step that
//    begins at or after from_s and returns at the first step that begins at or after
//    from_s + for_s (no for_s: it never returns); with steps = [FIRST, LAST] it is down for
//    those steps and back at LAST + 1. What the run does then is the algorithm's
//    (docs/virtual_cluster.md, "Failures").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dplab::cluster {

struct Shape;

enum class EventKind { slow, link, fail };

// A slow event's factor: constant, or drawn for each (step, rank).
struct FactorDraw {
  enum class Kind { constant, uniform, lognormal };
  Kind kind = Kind::constant;
  double factor = 1.0;           // constant
  double low = 1.0, high = 1.0;  // uniform on [low, high)
  double sigma = 0.0;            // lognormal: exp(sigma z), z standard normal (median 1)
  uint64_t seed = 1;
  double at(int64_t step, int rank) const;
};

struct Event {
  EventKind kind = EventKind::slow;
  std::string where;       // "FILE:LINE" of its table, for messages
  std::vector<int> ranks;  // slow, fail: world ranks
  std::vector<int> nodes;  // slow, fail: every rank of these nodes; link: their interfaces
  bool fabric = false;     // link: every interface
  // When: the virtual window [from_s, from_s + for_s) (for_s unset: to the end), or the global
  // steps [first_step, last_step]. A slow event applies to a step that begins inside it.
  std::optional<double> from_s, for_s;
  std::optional<int64_t> first_step, last_step;
  FactorDraw factor;       // slow
  double bandwidth = 1.0;  // link: factor on the interfaces' rate (0.1: a tenth)
  double latency = 1.0;    // link: factor on their latency

  bool active_at(double t) const;
  bool active_at_step(int64_t step) const;
};

// A link's factors: rate x bandwidth, latency x latency.
struct LinkFactor {
  double bandwidth = 1.0;
  double latency = 1.0;
};

class Events {
 public:
  Events() = default;
  explicit Events(std::vector<Event> list) : list_(std::move(list)) {}
  bool empty() const { return list_.empty(); }
  const std::vector<Event>& list() const { return list_; }
  void append(const Events& more);
  bool has_link_events() const;
  bool has_fail_events() const;

  // Throws naming the event's file and line when it names a rank or node the job lacks.
  void check_against(const Shape& shape) const;
  // The compute factor of world rank `rank` (on `node`) for global step `step` beginning at
  // virtual time `t`: the product of the slow events that apply (1 when none).
  double compute_factor(int rank, int node, int64_t step, double t) const;
  // The factors on node `node`'s interface at virtual time t (fabric events included).
  LinkFactor interface_at(int node, double t) const;
  // Between the interfaces of `nodes` at time t: the smallest bandwidth factor and the largest
  // latency factor among them.
  LinkFactor path_at(const std::vector<int>& nodes, double t) const;
  // The fail event that has world rank `rank` (on `node`) down for global step `step`, which
  // begins at the world's virtual time t; null when the rank is up (the first such event when
  // several overlap).
  const Event* failure_of(int rank, int node, int64_t step, double t) const;
  // The world ranks of `shape` that are down for step `step` beginning at t, ascending.
  std::vector<int> down_ranks(const Shape& shape, int64_t step, double t) const;

 private:
  std::vector<Event> list_;
};

// "slow 3 for ranks [1] from 10 s for 60 s": one line per event for the run header.
std::string describe(const Event& e);

}  // namespace dplab::cluster
