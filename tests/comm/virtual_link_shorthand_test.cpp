// The link.intra / link.inter shorthand through the options path in virtual time (issue #20
// item 3: the sleep-based link emulation is gone; its options stand for a cluster platform).
// 4 ranks. CommConfig::from_options must turn the options into the platform; the tests then
// run its world with the clock in manual mode so that every expected time is exact arithmetic.
#include <gtest/gtest.h>

#include <chrono>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"

namespace dplab {
namespace {

using cluster::VirtualClock;
using cluster::VirtualTime;

#define EXPECT_TIME(a, b) EXPECT_NEAR((a), (b), 1e-12 * (b) + 1e-15)

struct LinkWorld {
  std::shared_ptr<VirtualTime> vt;
  std::shared_ptr<Communicator> comm;
};

// The world the options give, its clock in manual mode (compute only by add_compute).
LinkWorld world_from(const Options& opt) {
  CommConfig cfg = CommConfig::from_options(opt);
  EXPECT_TRUE(cfg.platform) << "link.* gave no platform";
  const int W = MpiEnv::get().world_size();
  cfg.virtual_time = std::make_shared<VirtualTime>(
      *cfg.platform, cluster::shape_of(*cfg.platform, W, cfg.ranks_per_node),
      VirtualClock::Compute::manual);
  return {cfg.virtual_time, mpi_world(cfg)};
}

TEST(VirtualLinkShorthand, ASlowInterNodeLinkIsChargedInVirtualTimeNotSlept) {
  Options opt;
  opt.set("ranks_per_node", "1");  // every rank its own node: all traffic crosses the network
  // A latency of 1 s: a sleep-based emulation would need seconds of real time per operation.
  opt.set("link.inter", "1s,100MB/s");
  LinkWorld w = world_from(opt);
  const int n = w.comm->size();
  ASSERT_EQ(n, 4);
  Tensor t = Tensor::full({250000}, float(w.comm->rank() + 1));  // 1 MB
  const auto t0 = Clock::now();
  Request r = w.comm->iallreduce(t, ReduceOp::sum);
  // Ring allreduce: 2(P-1) alpha + 2(P-1)/P n/B = 6 x 1 s + 1.5 x 1e6 / 1e8 = 6.015 s.
  const double expect = 2 * 3 * 1.0 + 2.0 * 3 / 4 * 1e6 / 100e6;
  EXPECT_FALSE(r.test());  // the clock reads 0, the allreduce ends at 6.015 s
  r.wait();
  EXPECT_TIME(w.vt->clock.now(), expect);
  EXPECT_EQ(t.data<float>()[0], 1.f + 2.f + 3.f + 4.f);
  // Operations of one communicator queue: two more end at 3 x 6.015 s.
  w.comm->allreduce(t, ReduceOp::sum);
  w.comm->allreduce(t, ReduceOp::sum);
  EXPECT_TIME(w.vt->clock.now(), 3 * expect);
  // A point-to-point message across nodes: alpha + n/B = 1 s + 10 ms.
  if (w.comm->rank() == 0) w.comm->send(t, 1, 5);
  if (w.comm->rank() == 1) {
    w.comm->recv(t, 0, 5);
    EXPECT_TIME(w.vt->clock.now(), 3 * expect + 1.0 + 1e6 / 100e6);
  }
  // Charged, not slept: 19 s of virtual time took far less real time.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), expect);
}

TEST(VirtualLinkShorthand, IntraNodeTrafficIsFreeWhenOnlyTheInterLinkIsSet) {
  Options opt;
  opt.set("ranks_per_node", "2");  // nodes {0, 1}, {2, 3}
  opt.set("link.inter", "2ms,100MB/s");
  LinkWorld w = world_from(opt);
  const int R = w.comm->rank();
  Tensor t = Tensor::zeros({250000});
  // Within node 0: free (the unset intra link costs nothing).
  if (R == 0) w.comm->send(t, 1, 1);
  if (R == 1) {
    w.comm->recv(t, 0, 1);
    EXPECT_EQ(w.vt->clock.now(), 0.0);
  }
  // A node communicator's allreduce: free.
  auto node = w.comm->split(R / 2, R, "node");
  node->allreduce(t, ReduceOp::sum);
  EXPECT_EQ(w.vt->clock.now(), 0.0);
  // Across nodes: alpha + n/B.
  if (R == 2) w.comm->send(t, 1, 2);
  if (R == 1) {
    w.comm->recv(t, 2, 2);
    EXPECT_TIME(w.vt->clock.now(), 2e-3 + 1e6 / 100e6);
  }
}

TEST(VirtualLinkShorthand, TheOptionsAloneBuildAVirtualWorld) {
  Options opt;
  opt.set("ranks_per_node", "2");
  opt.set("link.inter", "1ms,1GB/s");
  opt.set("link.intra", "1us,10GB/s");
  auto c = mpi_world(CommConfig::from_options(opt));
  auto vt = c->virtual_time();
  ASSERT_TRUE(vt);
  EXPECT_EQ(vt->platform.name, "link");
  EXPECT_EQ(vt->shape.nodes, 2);
  EXPECT_EQ(c->node_of(3), 1);
  EXPECT_EQ(vt->clock.mode(), VirtualClock::Compute::measured);
}

}  // namespace
}  // namespace dplab
