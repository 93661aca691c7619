#include "dplab/comm/algorithms/oscars_search.h"

#include <algorithm>
#include <queue>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

OscarsSearchMode parse_oscars_search_mode(const std::string& s) {
  if (s == "exact") return OscarsSearchMode::exact;
  if (s == "alg1") return OscarsSearchMode::alg1;
  if (s == "text") return OscarsSearchMode::text;
  DPLAB_FAIL_OPTION("option oscars.search: expected exact, alg1 or text, got '{}'", s);
}

namespace {

int64_t max_wait(const std::vector<int64_t>& t, int64_t T) {  // Eq. 2
  int64_t w = 0;
  for (int64_t ti : t) w = std::max(w, T % ti);  // Eq. 1
  return w;
}

}  // namespace

OscarsSchedule oscars_search(const std::vector<int64_t>& t, const OscarsSearchOptions& opt) {
  DPLAB_CHECK(!t.empty(), "oscars_search: no iteration times");
  for (int64_t ti : t) DPLAB_CHECK(ti >= 1, "oscars_search: iteration time {} us < 1 us", ti);
  DPLAB_CHECK_OPTION(opt.M >= 1, "option oscars.M: expected >= 1, got {}", opt.M);
  DPLAB_CHECK_OPTION(opt.tau_cap >= 0, "option oscars.tau_max: expected >= 0 (0: no cap), got {}",
                     opt.tau_cap);
  DPLAB_CHECK_OPTION(opt.text_step_us >= 1, "option oscars.text_step_us: expected >= 1, got {}",
                     opt.text_step_us);
  const int64_t t_min = *std::min_element(t.begin(), t.end());
  const int64_t t_max = *std::max_element(t.begin(), t.end());
  // The constraint of Eq. 3, plus the tau cap on the fastest worker when the user set one.
  // Without a cap the scan still ends: at the first zero wait (nothing later can beat it, ties
  // keep the smaller T), which for homogeneous workers is T = t_max, and otherwise where the
  // constraint breaks (T/t_min - T/t_max grows without bound when t_min < t_max).
  const bool capped = opt.tau_cap > 0;
  auto admissible = [&](int64_t T) {
    return T / t_min - T / t_max < opt.M && (!capped || T / t_min <= opt.tau_cap);
  };
  auto cap = [&](int64_t tau) { return capped ? std::min(tau, opt.tau_cap) : tau; };

  OscarsSchedule s;
  auto consider = [&](int64_t T) {
    ++s.candidates;
    const int64_t w = max_wait(t, T);
    if (s.candidates == 1 || w < s.max_wait_us) {  // strict: ties keep the smaller T
      s.T_us = T;
      s.max_wait_us = w;
    }
  };

  if (!admissible(t_max)) {
    // Empty feasible set (or t_max/t_min beyond the cap): notes §5.4.
    s.feasible = false;
    s.T_us = t_max;
    s.max_wait_us = max_wait(t, t_max);
    const int64_t limit = capped ? std::min(opt.M, opt.tau_cap) : opt.M;
    for (int64_t ti : t) s.tau.push_back(std::min(t_max / ti, limit));
    return s;
  }

  switch (opt.mode) {
    case OscarsSearchMode::exact: {
      // Merge the arithmetic sequences k*t_j (k*t_j >= t_max) in increasing order.
      using Item = std::pair<int64_t, size_t>;  // (value, worker)
      std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
      for (size_t j = 0; j < t.size(); ++j) heap.emplace((t_max + t[j] - 1) / t[j] * t[j], j);
      int64_t last = -1;
      while (!heap.empty()) {
        auto [T, j] = heap.top();
        heap.pop();
        if (T != last) {  // equal multiples of several workers are one candidate
          if (!admissible(T)) break;
          consider(T);
          if (s.max_wait_us == 0) break;
          last = T;
        }
        heap.emplace(T + t[j], j);
      }
      break;
    }
    case OscarsSearchMode::alg1:
      // T_1 = t_max, T_{i+1} = T_i + T_i/i = (i+1) t_max.
      for (int64_t i = 1; admissible(i * t_max) && !(s.candidates > 0 && s.max_wait_us == 0); ++i)
        consider(i * t_max);
      break;
    case OscarsSearchMode::text:
      for (int64_t T = t_max; admissible(T) && !(s.candidates > 0 && s.max_wait_us == 0);
           T += opt.text_step_us)
        consider(T);
      break;
  }
  for (int64_t ti : t) s.tau.push_back(cap(s.T_us / ti));
  return s;
}

}  // namespace dplab
