// Link emulation: on one machine, make messages between (virtual) nodes as slow as a real
// cluster's links so that overlap and exposed wait become visible.
//
// Cost model (per operation, decided when it is posted):
//   * link class: a point-to-point message uses `inter` when the peer is on another (virtual)
//     node, else `intra`; a collective uses `inter` when its communicator spans more than one
//     node (the slowest link bounds every step of a ring or tree), else `intra`. A class that
//     is not configured costs nothing, so emulation is off by default.
//   * each logical step of the algorithm MPICH would run costs latency + bytes/bandwidth, for
//     the bytes one rank sends in that step (n ranks, B = payload bytes of the call):
//       send/recv            1 step of B
//       allreduce            2(n-1) steps of B/n        (ring: reduce-scatter + allgather)
//       reduce_scatter       (n-1) steps of B/n         (B = the full input)
//       allgather            (n-1) steps of B/n         (B = the full output)
//       broadcast, reduce    ceil(log2 n) steps of B    (binomial tree)
//       barrier              ceil(log2 n) steps of 0 bytes
//   * a rank has one NIC per link class: operations on the same class queue behind each other
//     (start = max(now, link busy-until)), so two overlapping allreduces do not both get the
//     full bandwidth.
// The emulated time delays completion: a Request is not complete until both MPI says so and
// its emulated finish time has passed; waiting for it sleeps rather than spins.
#pragma once
#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace dplab {

using Clock = std::chrono::steady_clock;

struct LinkSpec {
  double latency_s = 0;
  double bandwidth_Bps = 0;  // bytes per second; 0 = infinite
  // Parses "LAT,BW", e.g. "20us,1.25GB/s", "1ms,100MB/s", "0,10Gbit/s". Latency units s, ms,
  // us, ns; bandwidth units B/s, KB/s, MB/s, GB/s (powers of 1000), KiB/s, MiB/s, GiB/s, and
  // bit/s, Kbit/s, Mbit/s, Gbit/s. `what` names the option in errors.
  static LinkSpec parse(const std::string& text, const std::string& what);
  double cost(double steps, double bytes_per_step) const {
    return steps * (latency_s + (bandwidth_Bps > 0 ? bytes_per_step / bandwidth_Bps : 0.0));
  }
};

enum class LinkClass { intra, inter };

enum class CollectiveKind { p2p, allreduce, reduce_scatter, allgather, broadcast, reduce, barrier };

// Emulated cost in seconds of one operation on n ranks moving `bytes` (see the model above).
double emulated_cost(const LinkSpec& link, CollectiveKind kind, int n, double bytes);

// Per-process link timelines, shared by a world communicator and everything split from it.
class LinkEmulator {
 public:
  LinkEmulator(std::optional<LinkSpec> intra, std::optional<LinkSpec> inter)
      : intra_(intra), inter_(inter) {}
  bool enabled() const { return intra_.has_value() || inter_.has_value(); }
  const std::optional<LinkSpec>& spec(LinkClass c) const {
    return c == LinkClass::inter ? inter_ : intra_;
  }
  // Reserves the link for one operation posted now; returns the time before which it must not
  // complete (now when the class is not emulated).
  Clock::time_point reserve(LinkClass c, CollectiveKind kind, int n, double bytes);

 private:
  std::optional<LinkSpec> intra_, inter_;
  std::mutex mu_;
  Clock::time_point busy_until_[2]{};
};

}  // namespace dplab
