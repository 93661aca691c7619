#include "dplab/comm/algorithms/oscars_search.h"

#include <algorithm>
#include <map>
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

// Times that agree within eps count as one time: sorted, a group starts at the fastest time not
// yet grouped and takes every time up to it + eps; each member takes the group's slowest time
// (no worker is planned faster than it measured). eps = 0 groups only equal times.
std::vector<int64_t> equal_within(const std::vector<int64_t>& t, int64_t eps) {
  std::vector<int64_t> sorted = t;
  std::sort(sorted.begin(), sorted.end());
  std::map<int64_t, int64_t> slowest;  // time -> its group's slowest
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] - sorted[i] <= eps) ++j;
    for (size_t k = i; k < j; ++k) slowest[sorted[k]] = sorted[j - 1];
    i = j;
  }
  std::vector<int64_t> r;
  for (int64_t ti : t) r.push_back(slowest.at(ti));
  return r;
}

// Calls visit(T) on the candidate T values of the search mode in increasing order while
// admissible(T) holds, until visit returns false.
template <typename Admissible, typename Visit>
void scan_candidates(const std::vector<int64_t>& t, int64_t t_max, const OscarsSearchOptions& opt,
                     Admissible admissible, Visit visit) {
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
          if (!admissible(T) || !visit(T)) return;
          last = T;
        }
        heap.emplace(T + t[j], j);
      }
      return;
    }
    case OscarsSearchMode::alg1:
      // T_1 = t_max, T_{i+1} = T_i + T_i/i = (i+1) t_max.
      for (int64_t i = 1; admissible(i * t_max); ++i)
        if (!visit(i * t_max)) return;
      return;
    case OscarsSearchMode::text:
      for (int64_t T = t_max; admissible(T); T += opt.text_step_us)
        if (!visit(T)) return;
      return;
  }
}

}  // namespace

OscarsSchedule oscars_search(const std::vector<int64_t>& measured, const OscarsSearchOptions& opt) {
  DPLAB_CHECK(!measured.empty(), "oscars_search: no iteration times");
  for (int64_t ti : measured)
    DPLAB_CHECK(ti >= 1, "oscars_search: iteration time {} us < 1 us", ti);
  DPLAB_CHECK_OPTION(opt.M >= 1, "option oscars.M: expected >= 1, got {}", opt.M);
  DPLAB_CHECK_OPTION(opt.tau_cap >= 0, "option oscars.tau_max: expected >= 0 (0: no cap), got {}",
                     opt.tau_cap);
  DPLAB_CHECK_OPTION(opt.text_step_us >= 1, "option oscars.text_step_us: expected >= 1, got {}",
                     opt.text_step_us);
  DPLAB_CHECK_OPTION(opt.resolution_us >= 0,
                     "option oscars.resolution_us: expected >= 0 us (or 'measured'), got {}",
                     opt.resolution_us);
  const int64_t eps = opt.resolution_us;
  // The search runs on the times with those within eps of each other made equal; the waits it
  // reports (Eq. 2 at T*) are the measured times'.
  const std::vector<int64_t> t = equal_within(measured, eps);
  const int64_t t_min = *std::min_element(t.begin(), t.end());
  const int64_t t_max = *std::max_element(t.begin(), t.end());
  // The constraint of Eq. 3, plus the tau cap on the fastest worker when the user set one.
  // Without a cap the scan still ends: at the first wait <= eps (nothing later is measurably
  // better, ties keep the smaller T), which for homogeneous workers is T = t_max, and otherwise
  // where the constraint breaks (T/t_min - T/t_max grows without bound when t_min < t_max).
  const bool capped = opt.tau_cap > 0;
  auto admissible = [&](int64_t T) {
    return T / t_min - T / t_max < opt.M && (!capped || T / t_min <= opt.tau_cap);
  };
  auto cap = [&](int64_t tau) { return capped ? std::min(tau, opt.tau_cap) : tau; };

  OscarsSchedule s;
  s.resolution_us = eps;
  if (!admissible(t_max)) {
    // Empty feasible set (or t_max/t_min beyond the cap): notes §5.4.
    s.feasible = false;
    s.T_us = t_max;
    s.max_wait_us = max_wait(measured, t_max);
    const int64_t limit = capped ? std::min(opt.M, opt.tau_cap) : opt.M;
    for (int64_t ti : t) s.tau.push_back(std::min(t_max / ti, limit));
    return s;
  }

  // Pass 1: the least wait over the candidates, up to the first one within eps of zero. (The
  // first candidate, T = t_max, is admissible, so there is at least one.)
  int64_t least = -1;
  scan_candidates(t, t_max, opt, admissible, [&](int64_t T) {
    ++s.candidates;
    const int64_t w = max_wait(t, T);
    if (least < 0 || w < least) least = w;
    return w > eps;
  });
  // Pass 2: the smallest candidate whose wait is within eps of the least (with eps = 0: the
  // first candidate with the least wait, Eq. 3's argmin with ties to the smallest T).
  scan_candidates(t, t_max, opt, admissible, [&](int64_t T) {
    const int64_t w = max_wait(t, T);
    if (w > least + eps) return true;
    s.T_us = T;
    s.max_wait_us = w;
    return false;
  });
  for (int64_t ti : t) s.tau.push_back(cap(s.T_us / ti));
  s.max_wait_us = max_wait(measured, s.T_us);
  return s;
}

}  // namespace dplab
