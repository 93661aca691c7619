// The Oscars T* search (comm/algorithms/oscars_search.h) on hand-worked cases
// (papers/notes/oscars.md §5.1), the degenerate cases and the three readings.
#include <gtest/gtest.h>

#include <algorithm>

#include "dplab/comm/algorithms/oscars_search.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

using V = std::vector<int64_t>;

OscarsSearchOptions opts(int64_t M, OscarsSearchMode mode = OscarsSearchMode::exact) {
  OscarsSearchOptions o;
  o.M = M;
  o.mode = mode;
  return o;
}

TEST(OscarsSearch, TwoWorkers) {
  // t = [0.30, 0.45] s, M = 4: candidates 0.45 (wait 0.15), 0.6 (0.15), 0.9 (0, 0): T* = 0.9.
  for (auto mode : {OscarsSearchMode::exact, OscarsSearchMode::alg1, OscarsSearchMode::text}) {
    const auto s = oscars_search({300000, 450000}, opts(4, mode));
    EXPECT_EQ(s.T_us, 900000);
    EXPECT_EQ(s.tau, (V{3, 2}));
    EXPECT_EQ(s.max_wait_us, 0);
    EXPECT_TRUE(s.feasible);
  }
}

TEST(OscarsSearch, ThreeWorkersExact) {
  // t = [0.10, 0.13, 0.25] s, M = 6: at 0.52 the waits are 0.02, 0, 0.02; no admissible
  // candidate does better (the constraint first breaks at 0.9: floor(9) - floor(3.6) = 6).
  const auto s = oscars_search({100000, 130000, 250000}, opts(6));
  EXPECT_EQ(s.T_us, 520000);
  EXPECT_EQ(s.tau, (V{5, 4, 2}));
  EXPECT_EQ(s.max_wait_us, 20000);
  // The exact set below 0.9: 0.25 0.26 0.30 0.39 0.40 0.50 0.52 0.60 0.65 0.70 0.75 0.78 0.80
  // (0.5 is a multiple of both 0.10 and 0.25 and counted once).
  EXPECT_EQ(s.candidates, 13);
}

TEST(OscarsSearch, ThreeWorkersAlgorithm1Literal) {
  // T = i * t_max: 0.25 (wait 0.12), 0.50 (0.11), 0.75 (0.10); 1.00 breaks the constraint.
  const auto s = oscars_search({100000, 130000, 250000}, opts(6, OscarsSearchMode::alg1));
  EXPECT_EQ(s.T_us, 750000);
  EXPECT_EQ(s.tau, (V{7, 5, 3}));
  EXPECT_EQ(s.max_wait_us, 100000);
  EXPECT_EQ(s.candidates, 3);
}

TEST(OscarsSearch, ThreeWorkersTextReading) {
  // T++ in 1 ms steps reaches the same optimum as the exact set (it contains it).
  auto o = opts(6, OscarsSearchMode::text);
  o.text_step_us = 1000;
  const auto s = oscars_search({100000, 130000, 250000}, o);
  EXPECT_EQ(s.T_us, 520000);
  EXPECT_EQ(s.tau, (V{5, 4, 2}));
  // A coarse step misses 0.52: with 100 ms steps T in {0.25, 0.35, ..., 0.85} (0.95 breaks).
  o.text_step_us = 100000;
  const auto c = oscars_search({100000, 130000, 250000}, o);
  EXPECT_EQ(c.candidates, 7);
  EXPECT_NE(c.T_us, 520000);
}

TEST(OscarsSearch, ExactEqualsBruteForceOverEveryMicrosecond) {
  // The "text" reading with a 1 us step scans every integer T from t_max until the constraint
  // first breaks: the exact candidate set must find the same T* (the sawtooth argument).
  const std::vector<V> cases = {{70000, 110000},
                                {100000, 130000, 250000},
                                {33000, 41000, 57000, 60000},
                                {12345, 23456},
                                {9000, 9100}};
  for (const auto& t : cases)
    for (int64_t M : {2, 4, 6}) {
      const auto e = oscars_search(t, opts(M));
      auto b = opts(M, OscarsSearchMode::text);
      b.text_step_us = 1;
      const auto r = oscars_search(t, b);
      EXPECT_EQ(e.T_us, r.T_us) << "M " << M << " t0 " << t[0];
      EXPECT_EQ(e.max_wait_us, r.max_wait_us);
      EXPECT_EQ(e.tau, r.tau);
      if (e.feasible) {  // the constraint holds for the chosen tau
        const int64_t gap = *std::max_element(e.tau.begin(), e.tau.end()) -
                            *std::min_element(e.tau.begin(), e.tau.end());
        EXPECT_LT(gap, M);
      }
    }
}

TEST(OscarsSearch, EmptyFeasibleSet) {
  // floor(t_max/t_min) - 1 = 5 >= M = 4: fallback T* = t_max, tau = min(floor(t_max/t_i), M).
  const auto s = oscars_search({100000, 250000, 600000}, opts(4));
  EXPECT_FALSE(s.feasible);
  EXPECT_EQ(s.T_us, 600000);
  EXPECT_EQ(s.tau, (V{4, 2, 1}));
  EXPECT_EQ(s.max_wait_us, 100000);
}

TEST(OscarsSearch, HomogeneousWorkers) {
  // The constraint never breaks (0 < M); every wait is 0 at T = t, and ties go to the smallest
  // T, so the scan stops at its first candidate: T* = t, tau = 1 (per-step averaging), with or
  // without a cap.
  auto o = opts(4);
  for (int64_t cap : {0, 16}) {
    o.tau_cap = cap;
    const auto s = oscars_search({200000, 200000, 200000}, o);
    EXPECT_TRUE(s.feasible);
    EXPECT_EQ(s.T_us, 200000);
    EXPECT_EQ(s.tau, (V{1, 1, 1}));
    EXPECT_EQ(s.candidates, 1);
  }
  // Nearly homogeneous: a cap bounds tau ...
  o.tau_cap = 16;
  const auto n = oscars_search({100000, 100250}, o);
  EXPECT_LE(n.tau[0], 16);
  EXPECT_LE(n.T_us, 16 * 100000);
  // ... where Eq. 3 alone gives the first common multiple, 250 * 400 * 401 us (wait 0; the
  // constraint holds there: 401 - 400 = 1 < 4 and first breaks near T = 1.6e8 us).
  o.tau_cap = 0;
  const auto e = oscars_search({100000, 100250}, o);
  EXPECT_EQ(e.T_us, 40100000);
  EXPECT_EQ(e.tau, (V{401, 400}));
  EXPECT_EQ(e.max_wait_us, 0);
  const auto a = oscars_search({200000, 200000}, opts(4, OscarsSearchMode::alg1));
  EXPECT_EQ(a.T_us, 200000);
}

// Heterogeneous workers follow Eq. 3 without a default cap: t = [100, 105] ms, M = 4. The
// waits at T = k*105 ms are 5k ms and at k*100 ms they are 105 - (100k mod 105) > 0 until the
// first common multiple 2100 ms, where both are 0; the constraint holds there (21 - 20 < 4). So
// T* = 2100 ms, tau = [21, 20]. The old default cap of 16 stopped the scan at 1600 ms and
// returned T* = 105 ms, tau = [1, 1].
TEST(OscarsSearch, HeterogeneousWorkersAreNotCappedAgainstEq3) {
  for (auto mode : {OscarsSearchMode::exact, OscarsSearchMode::text}) {
    auto o = opts(4, mode);
    o.text_step_us = 1000;
    const auto s = oscars_search({100000, 105000}, o);
    EXPECT_TRUE(s.feasible);
    EXPECT_EQ(s.T_us, 2100000);
    EXPECT_EQ(s.tau, (V{21, 20}));
    EXPECT_EQ(s.max_wait_us, 0);
  }
  // The options' default (what --algo oscars reads) is no cap either.
  EXPECT_EQ(OscarsSearchOptions{}.tau_cap, 0);
}

// Measurement resolution eps (issue #33 item 5): waits within eps count as equal. Two workers
// 3 us apart, as two identical ranks measure: with eps = 0, Eq. 3 runs on to a distant common
// multiple; with eps >= 3 the first candidate, T = t_max = 100003, waits 3 us <= eps: T* =
// t_max, tau = [1, 1], one candidate.
TEST(OscarsSearch, NearEqualTimesWithinTheResolutionGiveTauOne) {
  auto o = opts(4);
  const auto exact = oscars_search({100000, 100003}, o);
  EXPECT_GT(exact.tau[0], 1);  // timing noise sets the round length
  o.resolution_us = 3;
  const auto s = oscars_search({100000, 100003}, o);
  EXPECT_EQ(s.T_us, 100003);
  EXPECT_EQ(s.tau, (V{1, 1}));
  EXPECT_EQ(s.max_wait_us, 3);
  EXPECT_EQ(s.candidates, 1);
  EXPECT_EQ(s.resolution_us, 3);
  // Four workers within 350 us of each other, eps = 350: at T = 100250 the waits are
  // 250, 0, 350, 150 (mod 100000, 100250, 99900, 100100): the worst, 350, is within eps.
  o.resolution_us = 350;
  const auto f = oscars_search({100000, 100250, 99900, 100100}, o);
  EXPECT_EQ(f.T_us, 100250);
  EXPECT_EQ(f.tau, (V{1, 1, 1, 1}));
  for (auto mode : {OscarsSearchMode::alg1, OscarsSearchMode::text}) {
    auto m = opts(4, mode);
    m.resolution_us = 350;
    EXPECT_EQ(oscars_search({100000, 100250, 99900, 100100}, m).tau, (V{1, 1, 1, 1}));
  }
}

// The boundary, by hand: t = [100000, 100250]. At T = k*100250 the wait is 250k (k < 400); at
// T = k*100000 (k >= 2) it is 100250 - 250k, first 0 at k = 401 (T = 40100000, the common
// multiple of HomogeneousWorkers). So with eps = 249 no wait but the common multiple's is within
// eps and Eq. 3's answer stands, tau = [401, 400]; with eps = 250, T = 100250 is (tau = 1).
TEST(OscarsSearch, ResolutionBoundary) {
  auto o = opts(4);
  o.resolution_us = 249;
  const auto below = oscars_search({100000, 100250}, o);
  EXPECT_EQ(below.T_us, 40100000);
  EXPECT_EQ(below.tau, (V{401, 400}));
  o.resolution_us = 250;
  const auto at = oscars_search({100000, 100250}, o);
  EXPECT_EQ(at.T_us, 100250);
  EXPECT_EQ(at.tau, (V{1, 1}));
  EXPECT_EQ(at.max_wait_us, 250);
}

// Heterogeneous workers keep Eq. 3 when their difference is far above the resolution:
// t = [100, 105] ms with eps = 1 ms. The waits at k*105 ms are 5k ms and at k*100 ms (k >= 2)
// 105 - 5k ms: the first within 1 ms is the common multiple 2100 ms (wait 0), as without eps.
TEST(OscarsSearch, HeterogeneousWorkersKeepEq3UnderAResolution) {
  auto o = opts(4);
  o.resolution_us = 1000;
  const auto s = oscars_search({100000, 105000}, o);
  EXPECT_EQ(s.T_us, 2100000);
  EXPECT_EQ(s.tau, (V{21, 20}));
  EXPECT_EQ(s.max_wait_us, 0);
}

// Waits within eps of the least count as equal, and ties go to the smallest T. t = [100, 170] ms,
// M = 4: the candidates 170, 200, 300, 340, 400, 500, 510, 600, 680, 700 ms have waits 70, 30,
// 130, 40, 60, 160, 10, 90, 80, 20 ms; 800 ms breaks the constraint (8 - 4 = 4). With eps = 0
// the least, 10 ms at 510 ms, is T*: tau = [5, 3], all 10 candidates scanned. With eps = 25 ms
// (below the 70 ms between the times: no grouping) the scan ends at 510 ms (10 <= 25), and the
// smallest candidate within 10 + 25 ms of the least is 200 ms (wait 30): tau = [2, 1].
TEST(OscarsSearch, WaitsWithinTheResolutionAreTiesToTheSmallestT) {
  auto o = opts(4);
  const auto exact = oscars_search({100000, 170000}, o);
  EXPECT_EQ(exact.T_us, 510000);
  EXPECT_EQ(exact.tau, (V{5, 3}));
  EXPECT_EQ(exact.max_wait_us, 10000);
  EXPECT_EQ(exact.candidates, 10);
  o.resolution_us = 25000;
  const auto s = oscars_search({100000, 170000}, o);
  EXPECT_EQ(s.T_us, 200000);
  EXPECT_EQ(s.tau, (V{2, 1}));
  EXPECT_EQ(s.max_wait_us, 30000);
  EXPECT_EQ(s.candidates, 7);
  o.resolution_us = -1;
  EXPECT_THROW(oscars_search({100000, 130000}, o), Error);
}

// Times within eps are one time, the slowest of their group, even where one is twice the other
// (a rank that a loaded host slowed for the whole profile, with a spread to match): t = [3976,
// 8523] us, eps = 4903 us: one group at 8523, T* = 8523, tau = [1, 1] (Eq. 3 on the measured
// times alone: T* = 8523 with wait 571, tau = [2, 1]). eps = 4546 is one microsecond short of
// the difference: two groups, and Eq. 3's answer.
TEST(OscarsSearch, TimesWithinTheResolutionAreOneTime) {
  auto o = opts(4);
  EXPECT_EQ(oscars_search({3976, 8523}, o).tau, (V{2, 1}));
  o.resolution_us = 4903;
  const auto s = oscars_search({3976, 8523}, o);
  EXPECT_EQ(s.T_us, 8523);
  EXPECT_EQ(s.tau, (V{1, 1}));
  EXPECT_EQ(s.max_wait_us, 8523 % 3976);  // Eq. 2 on the measured times
  o.resolution_us = 4546;
  EXPECT_EQ(oscars_search({3976, 8523}, o).tau, (V{2, 1}));
}

TEST(OscarsSearch, SingleWorkerAndErrors) {
  const auto s = oscars_search({5000}, opts(4));
  EXPECT_EQ(s.T_us, 5000);
  EXPECT_EQ(s.tau, (V{1}));
  EXPECT_THROW(oscars_search({}, opts(4)), Error);
  EXPECT_THROW(oscars_search({0, 5}, opts(4)), Error);
  EXPECT_THROW(oscars_search({1, 5}, opts(0)), Error);
  EXPECT_THROW(parse_oscars_search_mode("fast"), Error);
}

}  // namespace
}  // namespace dplab
