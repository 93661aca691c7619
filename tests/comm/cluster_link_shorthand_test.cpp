// The link.intra / link.inter shorthand for a virtual cluster platform (issue #20 item 3, "one
// cost model"; docs/virtual_cluster.md, "The link shorthand"): parsing "LATENCY,BANDWIDTH",
// the platform it stands for, and its costs under the one cost model, as hand arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/comm/cluster/cost_p2p.h"
#include "dplab/comm/cluster/units.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::cluster {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Options opts(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

TEST(ClusterLinkShorthand, ParsesLatencyCommaBandwidth) {
  Link l = parse_link("20us,1.25GB/s", "option link.inter");
  EXPECT_DOUBLE_EQ(l.latency_s, 20e-6);
  EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 1.25e9);
  EXPECT_DOUBLE_EQ(l.efficiency, 1.0);
  l = parse_link(" 1ms , 8Gbit/s", "x");
  EXPECT_DOUBLE_EQ(l.latency_s, 1e-3);
  EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 1e9);
  l = parse_link("0,100Mbit/s", "x");
  EXPECT_EQ(l.latency_s, 0.0);
  EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 100e6 / 8);
  std::string e = error_of([] { parse_link("20us", "option link.inter"); });
  EXPECT_NE(e.find("option link.inter: expected 'LATENCY,BANDWIDTH' such as '20us,1.25GB/s', "
                   "got '20us'"),
            std::string::npos)
      << e;
  e = error_of([] { parse_link("20 parsecs,1GB/s", "option link.inter"); });
  EXPECT_NE(e.find("option link.inter: expected a latency"), std::string::npos) << e;
  EXPECT_NE(e.find("parsecs"), std::string::npos) << e;
  e = error_of([] { parse_link("1ms,3 furlongs", "option link.inter"); });
  EXPECT_NE(e.find("option link.inter: expected a bandwidth"), std::string::npos) << e;
  EXPECT_NE(e.find("furlongs"), std::string::npos) << e;
  e = error_of([] { parse_link("1ms,0MB/s", "option link.inter"); });
  EXPECT_NE(e.find("positive"), std::string::npos) << e;
}

TEST(ClusterLinkShorthand, OptionsStandForALinkPlatform) {
  auto p = platform_from_options(opts(
      {{"link.inter", "100us,100Mbit/s"}, {"link.intra", "1us,10GB/s"}, {"ranks_per_node", "2"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "link");
  EXPECT_DOUBLE_EQ(p->nic.latency_s, 100e-6);
  EXPECT_DOUBLE_EQ(p->nic.rate(), 100e6 / 8);  // efficiency 1
  EXPECT_EQ(p->nics, 1);                       // one interface per node
  EXPECT_EQ(p->oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(p->intra.latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(p->intra.rate(), 10e9);
  EXPECT_EQ(p->algorithm, Algorithm::ring);
  // Nodes from --ranks-per-node: 8 ranks are 4 nodes of 2.
  const Shape s = shape_of(*p, 8, 2);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.ranks_per_node, 2);
  // The one cost model: a message across nodes alpha + n/B, within a node the intra link.
  EXPECT_DOUBLE_EQ(p2p_time(*p, 1e6, false), 100e-6 + 1e6 / 12.5e6);
  EXPECT_DOUBLE_EQ(p2p_time(*p, 1e6, true), 1e-6 + 1e6 / 10e9);
  // Two ranks of a node sending off-node at once share the one interface.
  EXPECT_DOUBLE_EQ(p2p_time(*p, 1e6, false, 2), 100e-6 + 2 * 1e6 / 12.5e6);
  // A ring allreduce of 1 MB over the 8 ranks: each step crosses the network (the slowest hop).
  EXPECT_DOUBLE_EQ(collective_time(*p, Op::allreduce, world_group(s), 1e6),
                   2 * 7 * 100e-6 + 2.0 * 7 / 8 * 1e6 / 12.5e6);
}

TEST(ClusterLinkShorthand, AnUnsetClassIsFreeAndNodesDefaultToOne) {
  // Only link.inter, no --ranks-per-node: every rank on one node, intra traffic free.
  auto p = platform_from_options(opts({{"link.inter", "2ms,2MB/s"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->intra.latency_s, 0.0);
  EXPECT_TRUE(std::isinf(p->intra.rate()));
  const Shape one = shape_of(*p, 4, 0);
  EXPECT_EQ(one.nodes, 1);
  EXPECT_EQ(one.ranks_per_node, 4);
  EXPECT_EQ(p2p_time(*p, 1e6, true), 0.0);
  EXPECT_EQ(collective_time(*p, Op::allreduce, world_group(one), 1e6), 0.0);
  // 4 nodes of 1: 2(P-1) (alpha + n/(P B)).
  const Shape four = shape_of(*p, 4, 1);
  EXPECT_DOUBLE_EQ(collective_time(*p, Op::allreduce, world_group(four), 1e6),
                   6 * 2e-3 + 1.5 * 1e6 / 2e6);
  // Only link.intra: the network is free.
  p = platform_from_options(opts({{"link.intra", "5us,1GB/s"}, {"ranks_per_node", "2"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p2p_time(*p, 1e6, false), 0.0);
  EXPECT_DOUBLE_EQ(p2p_time(*p, 1e6, true), 5e-6 + 1e6 / 1e9);
}

TEST(ClusterLinkShorthand, OffEmptyAndComputeScale) {
  EXPECT_FALSE(platform_from_options(opts({})));
  EXPECT_FALSE(platform_from_options(opts({{"link.inter", "off"}, {"link.intra", ""}})));
  auto p =
      platform_from_options(opts({{"link.inter", "1ms,1GB/s"}, {"cluster.compute_scale", "0.5"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->compute_scale, 0.5);
}

TEST(ClusterLinkShorthand, ClusterAndLinkTogetherIsAUsageError) {
  const Options both = opts({{"cluster", "cpu-10gbe"}, {"link.inter", "1ms,1GB/s"}});
  EXPECT_THROW(platform_from_options(both), UsageError);
  const std::string e = error_of([&] { platform_from_options(both); });
  EXPECT_NE(e.find("options cluster = 'cpu-10gbe' and link.inter: give one or the other"),
            std::string::npos)
      << e;
  // cluster = off with a link: the shorthand.
  auto p = platform_from_options(opts({{"cluster", "off"}, {"link.inter", "1ms,1GB/s"}}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "link");
  // A malformed link is a usage error naming the option.
  const Options bad = opts({{"link.intra", "fast"}});
  EXPECT_THROW(platform_from_options(bad), UsageError);
  EXPECT_NE(error_of([&] { platform_from_options(bad); }).find("option link.intra"),
            std::string::npos);
}

}  // namespace
}  // namespace dplab::cluster
