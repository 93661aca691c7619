// The Oscars load-balance search (Huang, arXiv 2102.08550, Eqs. 1-3 and Algorithm 1) as a pure
// function of the measured per-worker iteration times, in integer microseconds (floating fmod
// gets exact multiples wrong: 2.25 mod 0.45 evaluates to 0.45, not 0).
//
//   wait of worker i before a barrier at T     t_i^w = mod(T, t_i)                    (Eq. 1)
//   worst wait                                  max_i mod(T, t_i)                      (Eq. 2)
//   T* = argmin_T max_i mod(T, t_i)   s.t.  floor(T/t_min) - floor(T/t_max) < M       (Eq. 3)
//   tau_i = floor(T*/t_i)             (local steps of worker i per round)
//
// Three readings of the search (ALGORITHMS.md §6, papers/notes/oscars.md §1.3 and §5.1):
//   exact (default)  max_i mod(T, t_i) is a sawtooth that only drops at multiples k*t_j, so the
//                    constrained minimum lies in {k*t_j >= t_max}; scan those in increasing
//                    order, stop at the first one that breaks the constraint.
//   alg1             "Algorithm 1 literal": T <- T + T/i with the pass counter i incremented,
//                    i.e. T = i*t_max (the slowest worker never waits).
//   text             the prose: T = t_max, t_max + step, t_max + 2*step, ...
// In every mode ties go to the smallest T, so the scan stops at the first zero wait; that alone
// ends it for homogeneous workers (T* = t_max, every tau 1; notes §5.3), and the constraint
// ends it otherwise. tau_cap = 0 (the default) applies Eq. 3 as written, to heterogeneous
// workers too (t = [100, 105] ms: T* = 2100 ms, tau = [21, 20]). tau_cap > 0 is a user limit:
// the scan also stops once the fastest worker's tau would exceed it, which departs from Eq. 3
// (nearly equal measured times, e.g. 100000 and 100003 us, give rounds of thousands of steps
// by Eq. 3; a cap bounds them). If the constraint already fails at T = t_max
// (floor(t_max/t_min) - 1 >= M) the feasible set is empty: T* = t_max and
// tau_i = min(floor(t_max/t_i), M), which keeps the step gap <= M - 1 (notes §5.4).
//
// Measurement resolution (resolution_us = eps >= 0). Measured times carry noise: two identical
// workers measure, say, 100000 and 100003 us, and Eq. 3 on those numbers finds its zero wait at
// a common multiple thousands of steps away, a different one in every run. What differs by no
// more than eps cannot be told apart, so it counts as equal:
//   - times: sorted, a group starts at the fastest time not yet grouped and takes every time
//     up to it + eps; the search runs with each member at the group's slowest time. Times
//     within eps of each other are then one time: T* = t_max, tau = 1.
//   - waits: the scan ends at the first candidate whose wait is <= eps (nothing later is
//     measurably better), and T* is the smallest candidate scanned whose wait is within eps of
//     the least wait scanned (ties go to the smallest T, as before).
// max_wait_us is Eq. 2 at T* on the measured times. eps = 0 is Eq. 3 exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

enum class OscarsSearchMode { exact, alg1, text };

OscarsSearchMode parse_oscars_search_mode(const std::string& s);  // "exact", "alg1", "text"

// The members start at the declared defaults of the oscars.* keys (oscars_options.cpp).
struct OscarsSearchOptions {
  // bound on the local-step gap (tau_fast - tau_slow < M)
  int64_t M = oscars_option_table().default_int("oscars.M");
  // largest tau any worker may get; 0: no cap (Eq. 3 as written)
  int64_t tau_cap = oscars_option_table().default_int("oscars.tau_max");
  OscarsSearchMode mode = oscars_option_table().default_choice<OscarsSearchMode>("oscars.search");
  // T increment of the "text" reading
  int64_t text_step_us = oscars_option_table().default_int("oscars.text_step_us");
  // eps: waits within eps count as equal; 0: Eq. 3 exactly. Not oscars.resolution_us's default
  // (measured): the strategy sets the resolution it computes.
  int64_t resolution_us = 0;
};

struct OscarsSchedule {
  int64_t T_us = 0;           // T*
  std::vector<int64_t> tau;   // tau_i = floor(T*/t_i), capped when tau_cap > 0
  int64_t max_wait_us = 0;    // max_i mod(T*, t_i): the predicted worst idle time
  bool feasible = true;       // false: empty feasible set, fallback used
  int64_t candidates = 0;     // T values evaluated
  int64_t resolution_us = 0;  // the eps the search used
};

// measured: per-worker iteration times in microseconds (each >= 1).
OscarsSchedule oscars_search(const std::vector<int64_t>& measured, const OscarsSearchOptions& opt);

}  // namespace dplab
