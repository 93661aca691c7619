// Topology: node-local and cross-node communicators from virtual nodes; runs at 4 and 8 ranks.
#include <gtest/gtest.h>

#include "dplab/comm/mpi_env.h"
#include "dplab/comm/topology.h"

namespace dplab {
namespace {

TEST(Topology, VirtualNodesOfTwo) {
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  ASSERT_EQ(W % 2, 0);
  Options opt;
  opt.set("ranks_per_node", "2");
  Topology topo = Topology::from_options(opt);
  EXPECT_EQ(topo.world().size(), W);
  EXPECT_EQ(topo.world().rank(), R);
  EXPECT_EQ(topo.num_nodes(), W / 2);
  EXPECT_EQ(topo.node_id(), R / 2);
  EXPECT_EQ(topo.node().size(), 2);
  EXPECT_EQ(topo.local_rank(), R % 2);
  EXPECT_EQ(topo.cross().size(), W / 2);
  EXPECT_EQ(topo.cross().rank(), R / 2);
  for (int r = 0; r < W; ++r) EXPECT_EQ(topo.world().node_of(r), r / 2);
  // The node communicator sums the world ranks of my node; cross those with my local rank.
  Tensor t = Tensor::full({1}, R);
  topo.node().allreduce(t, ReduceOp::sum);
  EXPECT_EQ(t.item(), (R / 2) * 4 + 1);
  Tensor u = Tensor::full({1}, R);
  topo.cross().allreduce(u, ReduceOp::sum);
  double expect = 0;
  for (int r = R % 2; r < W; r += 2) expect += r;
  EXPECT_EQ(u.item(), expect);
}

TEST(Topology, HostNodesWithoutVirtualSplit) {
  // All test ranks run on one host: one node holding everyone, cross groups of one.
  Topology topo = Topology::from_options(Options());
  EXPECT_EQ(topo.num_nodes(), 1);
  EXPECT_EQ(topo.node().size(), topo.world().size());
  EXPECT_EQ(topo.cross().size(), 1);
}

TEST(Topology, RanksPerNodeMustDivideWorldSize) {
  const int W = MpiEnv::get().world_size();
  Options opt;
  opt.set("ranks_per_node", std::to_string(W - 1));  // 3 of 4, 7 of 8
  try {
    Topology::from_options(opt);
    ADD_FAILURE() << "no error for ranks_per_node " << W - 1;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the world size"), std::string::npos)
        << e.what();
  }
}

TEST(Topology, WaitPolicyOption) {
  Options opt;
  opt.set("comm.wait", "spin");
  EXPECT_EQ(Topology::from_options(opt).world().wait_options().policy, WaitPolicy::spin);
  Options bad;
  bad.set("comm.wait", "sometimes");
  EXPECT_THROW(CommConfig::from_options(bad), Error);
  // auto: these tests run more ranks than the 2 cores, so auto must back off.
  if (MpiEnv::get().world_size() > static_cast<int>(std::thread::hardware_concurrency())) {
    EXPECT_EQ(Topology::from_options(Options()).world().wait_options().policy, WaitPolicy::backoff);
  }
}

}  // namespace
}  // namespace dplab
