#include "dplab/comm/slowdown.h"
#include "dplab/comm/comm_options.h"

#include <thread>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

Slowdown::Slowdown(double factor) : factor_(factor) {
  DPLAB_CHECK(factor >= 1.0, "slowdown factor: expected >= 1, got {}", factor);
}

std::map<int, double> Slowdown::parse(const std::string& spec) {
  std::map<int, double> r;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    DPLAB_CHECK_OPTION(eq != std::string::npos && eq > 0 && eq + 1 < item.size(),
                       "option slowdown: entry '{}' is not RANK=FACTOR (in '{}')", item, spec);
    int rank = -1;
    double factor = 0;
    try {
      size_t n1 = 0, n2 = 0;
      rank = std::stoi(item.substr(0, eq), &n1);
      factor = std::stod(item.substr(eq + 1), &n2);
      DPLAB_CHECK(n1 == eq && n2 == item.size() - eq - 1, "trailing characters");
    } catch (const std::exception&) {
      DPLAB_FAIL_OPTION("option slowdown: entry '{}' is not RANK=FACTOR (in '{}')", item, spec);
    }
    DPLAB_CHECK_OPTION(rank >= 0, "option slowdown: rank {} < 0 (in '{}')", rank, spec);
    DPLAB_CHECK_OPTION(factor >= 1.0, "option slowdown: factor {} of rank {} < 1 (in '{}')", factor,
                       rank, spec);
    DPLAB_CHECK_OPTION(r.count(rank) == 0, "option slowdown: rank {} given twice (in '{}')", rank,
                       spec);
    r[rank] = factor;
  }
  return r;
}

Slowdown Slowdown::from_options(const Options& opt, int rank, int world_size) {
  const auto m = parse(communicator_option_table().get_string(opt, "slowdown"));
  for (const auto& [r, f] : m)
    DPLAB_CHECK_OPTION(r < world_size, "option slowdown: rank {} but only {} ranks", r, world_size);
  auto it = m.find(rank);
  return Slowdown(it == m.end() ? 1.0 : it->second);
}

void Slowdown::start() {
  t0_ = Clock::now();
  running_ = true;
}

void Slowdown::stop() {
  if (!running_) return;
  const double d = std::chrono::duration<double>(Clock::now() - t0_).count();
  compute_ += d;
  compute_total_ += d;
  running_ = false;
}

double Slowdown::pause() {
  stop();
  const double s = (factor_ - 1.0) * compute_;
  compute_ = 0;
  if (s <= 0 || virtual_) return 0;
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
  slept_ += s;
  return s;
}

}  // namespace dplab
