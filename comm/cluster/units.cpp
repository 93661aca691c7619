#include "dplab/comm/cluster/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "dplab/core/error.h"

namespace dplab::cluster {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits "12.5 MB/s" into 12.5 and "MB/s".
std::pair<double, std::string> number_unit(const std::string& text, const std::string& what,
                                           const char* expected) {
  const std::string s = trim(text);
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::logic_error&) {
    DPLAB_FAIL("{}: expected {}, got '{}'", what, expected, text);
  }
  DPLAB_CHECK(v >= 0 && std::isfinite(v), "{}: expected {} (not negative), got '{}'", what,
              expected, text);
  return {v, trim(s.substr(pos))};
}

}  // namespace

double parse_latency(const std::string& text, const std::string& what) {
  const char* expected = "a latency such as '2us' (units s, ms, us, ns)";
  auto [v, unit] = number_unit(text, what, expected);
  if (unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  if (unit.empty() && v == 0) return 0;
  DPLAB_FAIL("{}: expected {}, got unit '{}' in '{}'", what, expected, unit, text);
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  const char* expected =
      "a bandwidth such as '400Gbit/s' or '450GB/s' (units B/s KB/s MB/s GB/s KiB/s MiB/s "
      "GiB/s bit/s Kbit/s Mbit/s Gbit/s)";
  auto [v, unit] = number_unit(text, what, expected);
  static const std::pair<const char*, double> units[] = {
      {"B/s", 1},        {"KB/s", 1e3},        {"MB/s", 1e6},           {"GB/s", 1e9},
      {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"bit/s", 0.125},
      {"Kbit/s", 125.0}, {"Mbit/s", 125e3},    {"Gbit/s", 125e6}};
  for (const auto& [name, mult] : units)
    if (unit == name) {
      DPLAB_CHECK(v > 0, "{}: expected a positive bandwidth, got '{}'", what, text);
      return v * mult;
    }
  DPLAB_FAIL("{}: expected {}, got unit '{}' in '{}'", what, expected, unit, text);
}

Link parse_link(const std::string& text, const std::string& what) {
  const auto comma = text.find(',');
  DPLAB_CHECK(comma != std::string::npos,
              "{}: expected 'LATENCY,BANDWIDTH' such as '20us,1.25GB/s', got '{}'", what, text);
  Link l;
  l.latency_s = parse_latency(text.substr(0, comma), what);
  l.bandwidth_Bps = parse_bandwidth(text.substr(comma + 1), what);
  l.efficiency = 1.0;
  return l;
}

std::string format_latency(double s) {
  if (s == 0) return "0";
  if (s >= 1) return fmt::format("{:g} s", s);
  if (s >= 1e-3) return fmt::format("{:g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:g} us", s * 1e6);
  return fmt::format("{:g} ns", s * 1e9);
}

std::string format_bandwidth(double Bps) {
  if (std::isinf(Bps)) return "unlimited (a free link)";
  // Network rates are quoted in bit/s, memory and NVLink rates in bytes/s: give both.
  const double gbit = Bps * 8 / 1e9;
  return fmt::format("{:g} GB/s ({:g} Gbit/s)", Bps / 1e9, gbit);
}

}  // namespace dplab::cluster
