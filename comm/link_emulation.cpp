#include "dplab/comm/link_emulation.h"

#include <cctype>
#include <cmath>

#include "dplab/core/error.h"

namespace dplab {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Splits "12.5MB/s" into 12.5 and "MB/s".
std::pair<double, std::string> number_unit(const std::string& s, const std::string& what) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::logic_error&) {
    DPLAB_FAIL("{}: expected a number with a unit, got '{}'", what, s);
  }
  DPLAB_CHECK(v >= 0 && std::isfinite(v), "{}: negative or non-finite value '{}'", what, s);
  return {v, trim(s.substr(pos))};
}

}  // namespace

LinkSpec LinkSpec::parse(const std::string& text, const std::string& what) {
  auto comma = text.find(',');
  DPLAB_CHECK(comma != std::string::npos,
              "{}: expected 'LATENCY,BANDWIDTH' such as '20us,1.25GB/s', got '{}'", what, text);
  LinkSpec spec;
  auto [lat, lu] = number_unit(trim(text.substr(0, comma)), what);
  if (lu == "s")
    spec.latency_s = lat;
  else if (lu == "ms")
    spec.latency_s = lat * 1e-3;
  else if (lu == "us")
    spec.latency_s = lat * 1e-6;
  else if (lu == "ns")
    spec.latency_s = lat * 1e-9;
  else if (lu.empty() && lat == 0)
    spec.latency_s = 0;
  else
    DPLAB_FAIL("{}: latency unit must be s, ms, us or ns, got '{}' in '{}'", what, lu, text);
  auto [bw, bu] = number_unit(trim(text.substr(comma + 1)), what);
  static const std::pair<const char*, double> units[] = {
      {"B/s", 1},        {"KB/s", 1e3},        {"MB/s", 1e6},           {"GB/s", 1e9},
      {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"bit/s", 0.125},
      {"Kbit/s", 125.0}, {"Mbit/s", 125e3},    {"Gbit/s", 125e6}};
  bool found = false;
  for (auto& [name, mult] : units)
    if (bu == name) {
      spec.bandwidth_Bps = bw * mult;
      found = true;
    }
  DPLAB_CHECK(found,
              "{}: bandwidth unit must be one of B/s KB/s MB/s GB/s KiB/s MiB/s GiB/s "
              "bit/s Kbit/s Mbit/s Gbit/s, got '{}' in '{}'",
              what, bu, text);
  DPLAB_CHECK(spec.bandwidth_Bps > 0, "{}: bandwidth must be positive in '{}'", what, text);
  return spec;
}

double emulated_cost(const LinkSpec& link, CollectiveKind kind, int n, double bytes) {
  if (n <= 1 && kind != CollectiveKind::p2p) return 0.0;
  const double tree_steps = std::ceil(std::log2(static_cast<double>(n)));
  switch (kind) {
    case CollectiveKind::p2p:
      return link.cost(1, bytes);
    case CollectiveKind::allreduce:
      return link.cost(2.0 * (n - 1), bytes / n);
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::allgather:
      return link.cost(n - 1, bytes / n);
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce:
      return link.cost(tree_steps, bytes);
    case CollectiveKind::barrier:
      return link.cost(tree_steps, 0);
  }
  return 0.0;
}

Clock::time_point LinkEmulator::reserve(LinkClass c, CollectiveKind kind, int n, double bytes) {
  const auto now = Clock::now();
  const auto& s = spec(c);
  if (!s) return now;
  const double cost = emulated_cost(*s, kind, n, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto& busy = busy_until_[c == LinkClass::inter ? 1 : 0];
  const auto start = std::max(now, busy);
  busy = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cost));
  return busy;
}

}  // namespace dplab
