// Link events in virtual time (issue #36 item 1, comm/cluster/events.h): a degraded interface
// slows the messages and collectives that cross it, from the virtual time the event names.
// Platform of virtual_world.h (network 10 us, 1 GB/s; intra 1 us, 100 GB/s), 4 ranks, n = 1 MB
// for messages and 4 MB for collectives; every expected time is its arithmetic.
#include <gtest/gtest.h>

#include "dplab/comm/cluster/events_toml.h"
#include "virtual_world.h"

namespace dplab::test {
namespace {

cluster::Events events(const std::string& toml) {
  return cluster::parse_events_toml(toml, "events.toml");
}

// Node 1's interface at half its rate and three times its latency, from t = 0 on.
const char* kNode1Half =
    "[[event]]\nkind = \"link\"\nnodes = [1]\nfrom_s = 0\nbandwidth = 0.5\nlatency = 3\n";

TEST(VirtualEvents, AMessageThroughADegradedInterfaceTakesItsRateAndLatency) {
  World w = make_world(1, events(kNode1Half));  // 4 nodes of 1 rank
  const int R = w.comm->rank();
  Tensor t = Tensor::zeros({kFloats});
  if (R == 0) {
    w.comm->send(t, 1, 3);  // into node 1: n / (B / 2) on the wire
    EXPECT_TIME(clock_of(w), 2 * kN / kB);
  } else if (R == 1) {
    w.comm->recv(t, 0, 3);  // 3 alpha + 2 n / B
    EXPECT_TIME(clock_of(w), 3 * kAlpha + 2 * kN / kB);
  } else if (R == 2) {
    w.comm->send(t, 3, 3);  // nodes 2 and 3: untouched
    EXPECT_TIME(clock_of(w), kN / kB);
  } else {
    w.comm->recv(t, 2, 3);
    EXPECT_TIME(clock_of(w), kAlpha + kN / kB);
  }
}

TEST(VirtualEvents, AnEventAppliesFromItsStartUntilItsEnd) {
  // Node 1's interface at half rate in [4.5 ms, 6.5 ms): a message posted at 0 is untouched,
  // one posted at 5 ms is slowed, one posted at 7 ms is not (a message takes the link as it is
  // when the sender posts).
  World w = make_world(
      1, events("[[event]]\nkind = \"link\"\nnodes = [1]\nfrom_s = 0.0045\nfor_s = 0.002\n"
                "bandwidth = 0.5\n"));
  const int R = w.comm->rank();
  Tensor t = Tensor::zeros({kFloats});
  if (R == 0) {
    w.comm->send(t, 1, 3);
    EXPECT_TIME(clock_of(w), kN / kB);  // 1 ms
    w.vt->clock.add_compute(4e-3);      // posts at 5 ms
    w.comm->send(t, 1, 4);
    EXPECT_TIME(clock_of(w), 5e-3 + 2 * kN / kB);  // 7 ms
    w.comm->send(t, 1, 5);                         // posted at 7 ms: after the window
    EXPECT_TIME(clock_of(w), 7e-3 + kN / kB);
  } else if (R == 1) {
    w.comm->recv(t, 0, 3);
    w.comm->recv(t, 0, 4);
    w.comm->recv(t, 0, 5);
    EXPECT_TIME(clock_of(w), 8e-3 + kAlpha);  // the last byte left at 8 ms
  }
}

constexpr int64_t kElems = 1000000;  // 4 MB

TEST(VirtualEvents, ACollectiveRunsAtItsSlowestMembersInterface) {
  // Node 2's interface at a quarter of its rate: the ring over 4 nodes moves 1.5 n through
  // every interface, so it runs at B / 4: 6 alpha + 1.5 x 4 MB / 0.25 GB/s = 60 us + 24 ms
  // (the tree, 2 x 2 alpha + 2 n / (B / 4) = 32.04 ms, is slower: auto keeps the ring).
  World w = make_world(
      1, events("[[event]]\nkind = \"link\"\nnodes = [2]\nfrom_s = 0\nbandwidth = 0.25\n"));
  Tensor t = Tensor::ones({kElems});
  w.comm->allreduce(t);
  EXPECT_TIME(clock_of(w), 6 * kAlpha + 1.5 * 4e6 / 0.25e9);
  EXPECT_EQ(t.data<float>()[0], 4.0f);
  // Within node {0, 1} of a 2-rank-per-node world the intra link carries it: no change.
}

TEST(VirtualEvents, FabricEventsApplyToEveryInterfaceAndNotWithinANode) {
  World w =
      make_world(2, events("[[event]]\nkind = \"link\"\nfabric = true\nfrom_s = 0\nlatency = 2\n"));
  const int R = w.comm->rank();
  auto node = w.comm->split(R / 2, R, "node");
  Tensor t = Tensor::ones({kElems});
  // Node: ring of 2 on the intra link, as without the event: 2 x 1 us + 4e6 / 100e9.
  node->allreduce(t);
  const double t_node = 2e-6 + 40e-6;
  EXPECT_TIME(clock_of(w), t_node);
  // World, 2 nodes x 2 (virtual_collectives_test: the tree, 2 x 10 us + 2 x 1 us + 4 ms), with
  // the network latency doubled: 2 x 20 us + 2 x 1 us + 4 ms.
  w.comm->allreduce(t);
  EXPECT_TIME(clock_of(w), t_node + 40e-6 + 2e-6 + 4e-3);
}

}  // namespace
}  // namespace dplab::test
