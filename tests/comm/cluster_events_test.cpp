// Events in virtual time (issue #36 items 1 and 2, comm/cluster/events.h): the file format and
// its errors, which events apply to which rank, step and time (fail events: which ranks are
// down), and the drawn factors against a SplitMix64 and Box-Muller written here from their
// published definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>

#include "dplab/comm/cluster/events_toml.h"
#include "dplab/comm/cluster/platform.h"
#include "dplab/comm/cluster/platform_toml.h"
#include "dplab/core/error.h"

namespace dplab::cluster {
namespace {

Events parse(const std::string& text) {
  return parse_events_toml(text, "ev.toml");
}
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ClusterEvents, AFileOfEventsParses) {
  const Events ev = parse(
      "[[event]]\nkind = \"slow\"\nranks = [3]\nfrom_s = 10\nfor_s = 60\nfactor = 3\n"
      "[[event]]\nkind = \"slow\"\nnodes = [1]\nsteps = [100, 199]\ndistribution = "
      "\"lognormal\"\nsigma = 0.5\nseed = 7\n"
      "[[event]]\nkind = \"link\"\nfabric = true\nfrom_s = 0\nbandwidth = 0.1\n");
  ASSERT_EQ(ev.list().size(), 3u);
  const Event& a = ev.list()[0];
  EXPECT_EQ(a.kind, EventKind::slow);
  EXPECT_EQ(a.ranks, std::vector<int>{3});
  EXPECT_EQ(*a.from_s, 10.0);
  EXPECT_EQ(*a.for_s, 60.0);
  EXPECT_EQ(a.factor.factor, 3.0);
  EXPECT_EQ(a.where, "ev.toml:1: [[event]]");
  const Event& b = ev.list()[1];
  EXPECT_EQ(b.factor.kind, FactorDraw::Kind::lognormal);
  EXPECT_EQ(*b.first_step, 100);
  EXPECT_EQ(*b.last_step, 199);
  EXPECT_EQ(b.factor.seed, 7u);
  EXPECT_EQ(b.where, "ev.toml:7: [[event]]");
  const Event& c = ev.list()[2];
  EXPECT_EQ(c.kind, EventKind::link);
  EXPECT_TRUE(c.fabric);
  EXPECT_EQ(c.bandwidth, 0.1);
  EXPECT_EQ(c.latency, 1.0);
  EXPECT_TRUE(ev.has_link_events());
  EXPECT_EQ(describe(a), "slow: compute x3 for ranks [3] from 10 s for 60 s of virtual time");
  EXPECT_EQ(describe(c),
            "link: bandwidth x0.1, latency x1 on every interface from 0 s of virtual time on");
}

TEST(ClusterEvents, AClusterFileCarriesItsEvents) {
  const Platform p = parse_platform_toml(
      "name = \"lab\"\n[intra]\nlatency = \"1us\"\nbandwidth = \"10GB/s\"\n"
      "[network]\nlatency = \"10us\"\nbandwidth = \"1GB/s\"\n"
      "[[event]]\nkind = \"link\"\nnodes = [0]\nfrom_s = 1\nlatency = 4\n",
      "lab.toml");
  ASSERT_EQ(p.events.list().size(), 1u);
  EXPECT_EQ(p.events.list()[0].where, "lab.toml:8: [[event]]");
}

TEST(ClusterEvents, BadEventsAreRefusedNamingTheFileLineAndWhat) {
  const std::string slow = "[[event]]\nkind = \"slow\"\nranks = [0]\n";
  EXPECT_NE(error_of(slow + "from_s = 0\nfactor = 2\nspeed = 3\n")
                .find("ev.toml:6: key 'speed': unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(slow + "factor = 2\n").find("neither is given"), std::string::npos);
  EXPECT_NE(error_of(slow + "factor = 2\nfrom_s = 0\nsteps = [1, 2]\n").find("not both"),
            std::string::npos);
  EXPECT_NE(error_of(slow + "from_s = 0\n").find("needs factor"), std::string::npos);
  EXPECT_NE(error_of(slow + "from_s = 0\nfactor = 0\n").find("expected a positive number"),
            std::string::npos);
  EXPECT_NE(error_of(slow + "steps = [5, 2]\nfactor = 2\n").find("first step 5 is after last"),
            std::string::npos);
  EXPECT_NE(error_of(slow + "from_s = 0\ndistribution = \"uniform\"\nlow = 3\nhigh = 2\n")
                .find("needs low < high"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"return\"\nranks = [1]\nfrom_s = 5\n")
                .find("ev.toml:1: [[event]]: kind 'return': a return is the end of its fail "
                      "event's window"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"fail\"\nfrom_s = 5\n").find("needs ranks or nodes"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"fail\"\nranks = [1]\nfrom_s = 5\nfactor = 2\n")
                .find("a fail event takes ranks or nodes and when"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"fail\"\nranks = [1]\n").find("neither is given"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"link\"\nranks = [1]\nfrom_s = 5\nbandwidth = 0.5\n")
                .find("not ranks"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"link\"\nnodes = [1]\nsteps = [1, 2]\nbandwidth = 0.5\n")
                .find("not steps"),
            std::string::npos);
  EXPECT_NE(error_of("[[event]]\nkind = \"link\"\nnodes = [1]\nfrom_s = 0\n")
                .find("needs "
                      "bandwidth"),
            std::string::npos);
  EXPECT_NE(error_of("name = \"x\"\n").find("ev.toml:1: key 'name': unknown key"),
            std::string::npos);
  // Ranks and nodes are checked against the job's shape when the run starts.
  const Events ev = parse(slow +
                          "from_s = 0\nfactor = 2\n[[event]]\nkind = \"link\"\nnodes = "
                          "[2]\nfrom_s = 0\nbandwidth = 0.5\n");
  EXPECT_NO_THROW(ev.check_against(Shape{3, 1}));
  try {
    ev.check_against(Shape{2, 1});
    FAIL() << "node 2 of a 2-node job was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ev.toml:6: [[event]]: node 2 is not a node of this job"),
              std::string::npos)
        << e.what();
  }
}

TEST(ClusterEvents, SlowFactorsApplyByStepOrTimeAndMultiply) {
  const Events ev = parse(
      "[[event]]\nkind = \"slow\"\nranks = [1]\nsteps = [2, 3]\nfactor = 2\n"
      "[[event]]\nkind = \"slow\"\nnodes = [0]\nfrom_s = 1.5\nfor_s = 1\nfactor = 3\n");
  // rank 1 on node 0 (2 ranks per node); rank 2 on node 1.
  EXPECT_EQ(ev.compute_factor(1, 0, 1, 0.0), 1.0);  // step 1: before the range
  EXPECT_EQ(ev.compute_factor(1, 0, 2, 0.0), 2.0);
  EXPECT_EQ(ev.compute_factor(1, 0, 3, 0.0), 2.0);  // inclusive
  EXPECT_EQ(ev.compute_factor(1, 0, 4, 0.0), 1.0);
  EXPECT_EQ(ev.compute_factor(0, 0, 2, 1.5), 3.0);  // node 0 from 1.5 s: rank 0 too
  EXPECT_EQ(ev.compute_factor(1, 0, 3, 2.0), 6.0);  // both: 2 x 3
  EXPECT_EQ(ev.compute_factor(1, 0, 9, 2.5), 1.0);  // [1.5, 2.5): half-open
  EXPECT_EQ(ev.compute_factor(2, 1, 3, 2.0), 1.0);  // another node, another rank
}

TEST(ClusterEvents, LinkFactorsTakeTheSlowestInterfaceOfAPath) {
  const Events ev = parse(
      "[[event]]\nkind = \"link\"\nnodes = [1]\nfrom_s = 0\nbandwidth = 0.5\nlatency = 2\n"
      "[[event]]\nkind = \"link\"\nnodes = [2]\nfrom_s = 0\nbandwidth = 0.25\n"
      "[[event]]\nkind = \"link\"\nfabric = true\nfrom_s = 10\nfor_s = 5\nlatency = 3\n");
  EXPECT_EQ(ev.interface_at(0, 1.0).bandwidth, 1.0);
  EXPECT_EQ(ev.interface_at(1, 1.0).latency, 2.0);
  EXPECT_EQ(ev.interface_at(1, 12.0).latency, 6.0);  // node 1's x2 and the fabric's x3
  EXPECT_EQ(ev.interface_at(0, 12.0).latency, 3.0);
  const LinkFactor p = ev.path_at({0, 1, 2}, 1.0);
  EXPECT_EQ(p.bandwidth, 0.25);  // node 2's
  EXPECT_EQ(p.latency, 2.0);     // node 1's
  EXPECT_EQ(ev.path_at({0, 3}, 1.0).bandwidth, 1.0);
}

// Failures (issue #36 item 2): a rank is down for a step that begins inside the event's window
// on the world's clock, or whose number is in its step range; it is back at the first step that
// begins at or after the window's end (from_s + for_s), or at LAST + 1. 4 ranks, 2 per node.
TEST(ClusterEvents, FailEventsPutRanksDownForTheStepsTheyName) {
  const Events ev = parse(
      "[[event]]\nkind = \"fail\"\nranks = [1]\nfrom_s = 10\nfor_s = 300\n"
      "[[event]]\nkind = \"fail\"\nnodes = [1]\nsteps = [5, 6]\n"
      "[[event]]\nkind = \"fail\"\nranks = [0]\nfrom_s = 1000\n");
  ASSERT_EQ(ev.list().size(), 3u);
  EXPECT_EQ(ev.list()[0].kind, EventKind::fail);
  EXPECT_TRUE(ev.has_fail_events());
  EXPECT_FALSE(ev.has_link_events());
  EXPECT_EQ(describe(ev.list()[0]),
            "fail: ranks [1] down from 10 s for 300 s of virtual time; back at the first step "
            "from 310 s");
  EXPECT_EQ(describe(ev.list()[1]), "fail: nodes [1] down for steps 5..6; back at step 7");
  EXPECT_EQ(describe(ev.list()[2]),
            "fail: ranks [0] down from 1000 s of virtual time on; never back");
  const Shape shape{2, 2};
  using V = std::vector<int>;
  // Steps beginning (on the world's clock) at 9.99 s, 10 s, 309.99 s, 310 s: rank 1 fails at
  // the first step from 10 s and is back at the first step from 310 s.
  EXPECT_EQ(ev.down_ranks(shape, 0, 9.99), V{});
  EXPECT_EQ(ev.down_ranks(shape, 1, 10.0), V{1});
  EXPECT_EQ(ev.down_ranks(shape, 2, 309.99), V{1});
  EXPECT_EQ(ev.down_ranks(shape, 3, 310.0), V{});
  // Node 1 (ranks 2 and 3) for steps 5 and 6, whatever the time; rank 1 too if its window is on.
  EXPECT_EQ(ev.down_ranks(shape, 4, 400.0), V{});
  EXPECT_EQ(ev.down_ranks(shape, 5, 400.0), (V{2, 3}));
  EXPECT_EQ(ev.down_ranks(shape, 6, 100.0), (V{1, 2, 3}));
  EXPECT_EQ(ev.down_ranks(shape, 7, 100.0), V{1});
  // No for_s: down from 1000 s to the end.
  EXPECT_EQ(ev.down_ranks(shape, 8, 999.0), V{});
  EXPECT_EQ(ev.down_ranks(shape, 9, 1000.0), V{0});
  EXPECT_EQ(ev.down_ranks(shape, 10, 1e6), V{0});
  // Which event has a rank down: the window's (the first that applies).
  EXPECT_EQ(ev.failure_of(1, 0, 6, 100.0), &ev.list()[0]);
  EXPECT_EQ(ev.failure_of(3, 1, 6, 100.0), &ev.list()[1]);
  EXPECT_EQ(ev.failure_of(0, 0, 6, 100.0), nullptr);
  // Fail events change no compute or link factor.
  EXPECT_EQ(ev.compute_factor(1, 0, 1, 10.0), 1.0);
  EXPECT_EQ(ev.interface_at(1, 10.0).bandwidth, 1.0);
  EXPECT_NO_THROW(ev.check_against(shape));
  EXPECT_THROW(ev.check_against(Shape{1, 2}), Error);  // node 1 of a 1-node job
}

// SplitMix64 as published (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", 2014; the JDK's SplittableRandom): state += golden gamma, then mix.
uint64_t reference_splitmix(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TEST(ClusterEvents, DrawnFactorsAreSplitMixDrawsOfSeedStepAndRank) {
  // The generator's first output from state 0, as published.
  EXPECT_EQ(reference_splitmix(0), 0xe220a8397b1dcdafull);
  FactorDraw u;
  u.kind = FactorDraw::Kind::uniform;
  u.low = 1.0;
  u.high = 3.0;
  u.seed = 42;
  FactorDraw g;
  g.kind = FactorDraw::Kind::lognormal;
  g.sigma = 0.5;
  g.seed = 42;
  for (int64_t step : {0, 1, 17, 100000})
    for (int rank : {0, 5}) {
      const uint64_t a = reference_splitmix(reference_splitmix(42 + uint64_t(step)) + rank);
      const double u1 = double(a >> 11) / 9007199254740992.0;  // [0, 1)
      EXPECT_DOUBLE_EQ(u.at(step, rank), 1.0 + 2.0 * u1);
      const double v1 = double((a >> 11) + 1) / 9007199254740992.0;  // (0, 1]
      const double v2 = double((reference_splitmix(a) >> 11) + 1) / 9007199254740992.0;
      const double z = std::sqrt(-2 * std::log(v1)) * std::cos(2 * std::numbers::pi * v2);
      EXPECT_DOUBLE_EQ(g.at(step, rank), std::exp(0.5 * z));
    }
  // The same draw whatever the order it is asked in; a different one for another rank.
  EXPECT_EQ(g.at(17, 5), g.at(17, 5));
  EXPECT_NE(g.at(17, 5), g.at(17, 4));
  // Sanity of the distribution: the mean of exp(0.5 z) is exp(0.125) = 1.1331; its standard
  // deviation is sqrt((e^0.25 - 1) e^0.25) = 0.6039, so the mean of 20000 draws is within
  // 5 x 0.6039 / sqrt(20000) = 0.0214 of it except with odds below 1e-6.
  double sum = 0;
  for (int64_t s = 0; s < 20000; ++s) sum += g.at(s, 0);
  EXPECT_NEAR(sum / 20000, std::exp(0.125), 0.0214);
}

}  // namespace
}  // namespace dplab::cluster
