// Virtual cluster platforms: presets, shapes and cluster files (issue #20 item 1).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "dplab/comm/cluster/platform_toml.h"
#include "dplab/comm/cluster/presets.h"
#include "dplab/comm/cluster/units.h"
#include "dplab/core/error.h"

namespace dplab::cluster {
namespace {

// The error message of `f`, or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterPresets, TheIssuesPresetsExist) {
  const auto dgx = find_preset("dgx-h100");
  ASSERT_TRUE(dgx);
  EXPECT_EQ(dgx->ranks_per_node, 8);
  EXPECT_EQ(dgx->nics, 8);
  EXPECT_DOUBLE_EQ(dgx->nic.bandwidth_Bps, 400e9 / 8);  // 400 Gbit/s
  EXPECT_DOUBLE_EQ(dgx->intra.bandwidth_Bps, 450e9);    // NVLink 4, per direction
  const auto eth = find_preset("gpu4-25gbe");
  ASSERT_TRUE(eth);
  EXPECT_EQ(eth->ranks_per_node, 4);
  EXPECT_EQ(eth->nics, 1);
  EXPECT_DOUBLE_EQ(eth->nic.bandwidth_Bps, 25e9 / 8);
  const auto cpu = find_preset("cpu-10gbe");
  ASSERT_TRUE(cpu);
  EXPECT_DOUBLE_EQ(cpu->nic.bandwidth_Bps, 10e9 / 8);
  EXPECT_TRUE(find_preset("local-shm"));
  EXPECT_FALSE(find_preset("nope"));
  for (const auto& p : presets()) EXPECT_FALSE(p.sources.empty()) << p.name;
}

TEST(ClusterShape, FromWorldSizeAndRanksPerNode) {
  const Platform dgx = *find_preset("dgx-h100");
  Shape s = shape_of(dgx, 16, 0);
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.ranks_per_node, 8);
  EXPECT_EQ(s.node_of(9), 1);
  EXPECT_EQ(s.local_rank(9), 1);
  s = shape_of(dgx, 2, 0);  // fewer ranks than a node holds: one node of 2
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.ranks_per_node, 2);
  s = shape_of(dgx, 32, 4);  // --ranks-per-node overrides the platform
  EXPECT_EQ(s.nodes, 8);
  EXPECT_EQ(s.ranks_per_node, 4);
  const std::string e = error_of([&] { shape_of(dgx, 12, 8); });
  EXPECT_NE(e.find("12 ranks do not fill nodes of 8"), std::string::npos) << e;
  EXPECT_NE(e.find("option ranks_per_node"), std::string::npos) << e;
  s = shape_of(*find_preset("local-shm"), 64, 0);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.ranks_per_node, 64);
}

TEST(ClusterUnits, LatencyAndBandwidth) {
  EXPECT_DOUBLE_EQ(parse_latency("5us", "k"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_latency("0.5 ms", "k"), 5e-4);
  EXPECT_DOUBLE_EQ(parse_latency("0", "k"), 0.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbit/s", "k"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450 GB/s", "k"), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s", "k"), 1073741824.0);
  std::string e = error_of([] { parse_bandwidth("10Gb/s", "f.toml:3: key 'network.bandwidth'"); });
  EXPECT_NE(e.find("f.toml:3: key 'network.bandwidth'"), std::string::npos) << e;
  EXPECT_NE(e.find("got unit 'Gb/s'"), std::string::npos) << e;
  e = error_of([] { parse_latency("fast", "k"); });
  EXPECT_NE(e.find("expected a latency"), std::string::npos) << e;
  e = error_of([] { parse_bandwidth("0GB/s", "k"); });
  EXPECT_NE(e.find("positive"), std::string::npos) << e;
}

const char* kGood = R"(
name = "lab"
description = "two racks"
ranks_per_node = 4
oversubscription = 2
compute_scale = 0.5
algorithm = "hierarchical"
sources = ["a", "b"]
[intra]
latency = "2us"
bandwidth = "32GB/s"
efficiency = 0.8
[network]
latency = "20us"
bandwidth = "25Gbit/s"
nics = 2
)";

TEST(ClusterFile, ParsesEveryKey) {
  const Platform p = parse_platform_toml(kGood, "lab.toml");
  EXPECT_EQ(p.name, "lab");
  EXPECT_EQ(p.description, "two racks");
  EXPECT_EQ(p.ranks_per_node, 4);
  EXPECT_DOUBLE_EQ(p.oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(p.compute_scale, 0.5);
  EXPECT_EQ(p.algorithm, Algorithm::hierarchical);
  EXPECT_EQ(p.sources.size(), 2u);
  EXPECT_DOUBLE_EQ(p.intra.latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(p.intra.bandwidth_Bps, 32e9);
  EXPECT_DOUBLE_EQ(p.intra.efficiency, 0.8);
  EXPECT_DOUBLE_EQ(p.nic.latency_s, 20e-6);
  EXPECT_DOUBLE_EQ(p.nic.bandwidth_Bps, 25e9 / 8);
  EXPECT_DOUBLE_EQ(p.nic.efficiency, 1.0);
  EXPECT_EQ(p.nics, 2);
  // 2 sharing an interface behind a 2:1 switch: 3.125 GB/s / (2 x 2).
  EXPECT_DOUBLE_EQ(p.nic_rate(2), 25e9 / 8 / 4);
}

std::string file_error(const std::string& text) {
  return error_of([&] { parse_platform_toml(text, "c.toml"); });
}

TEST(ClusterFile, ErrorsNameFileKeyAndExpectation) {
  const std::string links =
      "[intra]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\n"
      "[network]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\n";
  std::string e = file_error("name = \"x\"\nbogus = 1\n" + links);
  EXPECT_NE(e.find("c.toml:2: key 'bogus': unknown key"), std::string::npos) << e;
  e = file_error("name = \"x\"\nranks_per_node = \"four\"\n" + links);
  EXPECT_NE(e.find("c.toml:2: key 'ranks_per_node': expected an integer >= 1, got a string"),
            std::string::npos)
      << e;
  e = file_error("name = \"x\"\nranks_per_node = 0\n" + links);
  EXPECT_NE(e.find("key 'ranks_per_node': expected an integer >= 1, got 0"), std::string::npos)
      << e;
  e = file_error("name = \"x\"\n[intra]\nlatency = \"1us\"\nbandwidth = 5\n");
  EXPECT_NE(e.find("c.toml:4: key 'intra.bandwidth': expected a bandwidth string"),
            std::string::npos)
      << e;
  e = file_error("name = \"x\"\n[intra]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\n");
  EXPECT_NE(e.find("c.toml: table [network] missing"), std::string::npos) << e;
  e = file_error("name = \"x\"\n[intra]\nbandwidth = \"1GB/s\"\n");
  EXPECT_NE(e.find("[intra] needs both latency and bandwidth (missing latency)"), std::string::npos)
      << e;
  e = file_error("name = \"x\"\nalgorithm = \"star\"\n" + links);
  EXPECT_NE(e.find("key 'algorithm': expected one of auto, ring, tree, hierarchical, got 'star'"),
            std::string::npos)
      << e;
  e = file_error("name = \"x\"\noversubscription = 0.5\n" + links);
  EXPECT_NE(e.find("c.toml: oversubscription: expected a number >= 1"), std::string::npos) << e;
  e = file_error(links);
  EXPECT_NE(e.find("key 'name': missing"), std::string::npos) << e;
  e = file_error("name = \n");
  EXPECT_NE(e.find("c.toml:1:"), std::string::npos) << e;  // TOML syntax error with position
  e = file_error("name = \"x\"\n[network]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\nnics = 0\n");
  EXPECT_NE(e.find("key 'network.nics': expected an integer >= 1, got 0"), std::string::npos) << e;
}

TEST(ClusterFile, ResolveNamesAPresetOrAFile) {
  EXPECT_EQ(resolve_platform("cpu-10gbe").name, "cpu-10gbe");
  const std::string path = ::testing::TempDir() + "cluster_platform_test.toml";
  {
    std::ofstream out(path);
    out << kGood;
  }
  EXPECT_EQ(resolve_platform(path).name, "lab");
  std::remove(path.c_str());
  const std::string e = error_of([] { resolve_platform("dgx-h1000"); });
  EXPECT_NE(e.find("neither a preset (dgx-h100, "), std::string::npos) << e;
}

}  // namespace
}  // namespace dplab::cluster
