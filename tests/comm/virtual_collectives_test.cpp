// Collectives in virtual time (issue #20 items 2 and 4; docs/virtual_cluster.md,
// "Communication"): a collective starts at the latest post time among its members (a shadow
// max-allreduce), after the communicator's previous one, and lasts what the cost model says; a
// wait moves the clock only if the end is later. 4 ranks on the test platform of
// virtual_world.h (network 10 us, 1 GB/s; intra 1 us, 100 GB/s); n = 4 MB (1e6 floats).
#include <chrono>
#include <thread>

#include "virtual_world.h"

namespace dplab::test {
namespace {

constexpr int64_t kElems = 1000000;
constexpr double kBytes = 4e6;
// Ring allreduce of 4 MB over 4 nodes: 2(P-1) alpha + 2(P-1)/P n/B = 6 x 10 us + 1.5 x 4 ms.
constexpr double kRing4 = 6 * 10e-6 + 1.5 * 4e6 / 1e9;  // 6.06 ms

TEST(VirtualCollectives, AllreduceStartsAtTheLatestPostTimeAndLastsTheModel) {
  World w = make_world(1);  // 4 nodes of 1
  const int R = w.comm->rank();
  w.vt->clock.add_compute(R * 1e-3);  // rank 3 posts last, at 3 ms
  Tensor t = Tensor::full({kElems}, float(R + 1));
  w.comm->allreduce(t);
  EXPECT_EQ(t.data<float>()[0], 10.0f);  // 1 + 2 + 3 + 4: the data is still right
  EXPECT_EQ(t.data<float>()[kElems - 1], 10.0f);
  // Auto picks the ring at 4 MB (tree: 2 x 2 x 10 us + 2 x 4 ms = 8.04 ms): every rank ends at
  // 3 ms + 6.06 ms, whenever it posted.
  EXPECT_TIME(clock_of(w), 3e-3 + kRing4);
}

TEST(VirtualCollectives, ABucketThatEndsBeforeBackwardAddsNoWaitOneThatDoesNotAddsTheExcess) {
  World w = make_world(1);
  Tensor b1 = Tensor::ones({kElems}), b2 = Tensor::ones({kElems});
  // "Backward" is 10 ms of compute; bucket 1 is launched at 2 ms, bucket 2 at 9 ms.
  w.vt->clock.add_compute(2e-3);
  Request r1 = w.comm->iallreduce(b1);  // 2 ms .. 8.06 ms
  w.vt->clock.add_compute(7e-3);
  Request r2 = w.comm->iallreduce(b2);  // after bucket 1 and from 9 ms: 9 ms .. 15.06 ms
  w.vt->clock.add_compute(1e-3);
  const double backward_end = clock_of(w);  // 10 ms
  EXPECT_TIME(backward_end, 10e-3);
  r1.wait();
  EXPECT_TIME(clock_of(w), backward_end);  // bucket 1 ended at 8.06 ms: no exposed wait
  r2.wait();
  EXPECT_TIME(clock_of(w) - backward_end, 9e-3 + kRing4 - 10e-3);  // exactly the excess
  EXPECT_TIME(r1.seconds_in_flight(), kRing4);
}

TEST(VirtualCollectives, OperationsOfOneCommunicatorQueue) {
  World w = make_world(1);
  Tensor a = Tensor::ones({kElems}), b = Tensor::ones({kElems});
  Request ra = w.comm->iallreduce(a), rb = w.comm->iallreduce(b);  // both posted at 0
  rb.wait();  // waiting for the second first: it still runs after the first
  EXPECT_TIME(clock_of(w), 2 * kRing4);
  ra.wait();
  EXPECT_TIME(clock_of(w), 2 * kRing4);
}

TEST(VirtualCollectives, NodeCrossAndWorldCommunicators) {
  World w = make_world(2);  // nodes {0, 1} and {2, 3}, one interface each
  const int R = w.comm->rank();
  auto node = w.comm->split(R / 2, R, "node");
  auto cross = w.comm->split(R % 2, R / 2, "cross");
  Tensor t = Tensor::ones({kElems});
  // Node: ring of 2 on the intra link: 2 x 1 us + 1 x 4e6 / 100e9 = 2 us + 40 us.
  node->allreduce(t);
  const double t_node = 2e-6 + 40e-6;
  EXPECT_TIME(clock_of(w), t_node);
  // Cross: 2 nodes of 1; both cross groups run at once through each node's one interface:
  // 0.5 GB/s each. Ring (= tree here): 2 x 10 us + 1 x 4e6 / 0.5e9 = 20 us + 8 ms.
  cross->allreduce(t);
  const double t_cross = t_node + 20e-6 + 8e-3;
  EXPECT_TIME(clock_of(w), t_cross);
  // World, 2 nodes x 2: ring 2 x 3 x 10 us + 1.5 x 4 ms = 6.06 ms; tree (2 nodes: each sends
  // n once) 2 x 1 x 10 us + 2 x 1 x 1 us + max(4e6 / 1e9, 2 x 4e6 / 100e9) = 22 us + 4 ms:
  // auto takes the tree.
  w.comm->allreduce(t);
  EXPECT_TIME(clock_of(w), t_cross + 22e-6 + 4e-3);
  EXPECT_EQ(t.data<float>()[0], 2.0f * 2.0f * 4.0f);  // node sum 2, cross sum 4, world sum 16
}

TEST(VirtualCollectives, OtherCollectives) {
  World w = make_world(1);
  const int R = w.comm->rank();
  Tensor part = Tensor::full({kElems / 4}, float(R)), all = Tensor::zeros({kElems});
  // Allgather of a 4 MB output: 3 x 10 us + 3/4 x 4 ms = 30 us + 3 ms.
  w.comm->allgather(part, all);
  double t = 30e-6 + 3e-3;
  EXPECT_TIME(clock_of(w), t);
  EXPECT_EQ(all.data<float>()[kElems - 1], 3.0f);
  // Reduce-scatter of a 4 MB input: the same.
  w.comm->reduce_scatter(all, part);
  t += 30e-6 + 3e-3;
  EXPECT_TIME(clock_of(w), t);
  // Broadcast of 4 MB (ring, pipelined): 3 x 10 us + 4 ms.
  w.comm->broadcast(all, 0);
  t += 30e-6 + 4e-3;
  EXPECT_TIME(clock_of(w), t);
  // Barrier: ceil(log2 4) = 2 rounds of 10 us.
  w.comm->barrier();
  t += 20e-6;
  EXPECT_TIME(clock_of(w), t);
}

TEST(VirtualCollectives, TestAnswersByVirtualTime) {
  World w = make_world(1);
  Tensor t = Tensor::ones({kElems});
  Request r = w.comm->iallreduce(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // done in real time by now
  EXPECT_FALSE(r.test());                                      // not at virtual 0
  w.vt->clock.add_compute(7e-3);
  EXPECT_TRUE(r.test());  // 6.06 ms <= 7 ms
  EXPECT_TIME(clock_of(w), 7e-3);
}

// Issue #32 item 5: the layer wraps the communicator it is given; ctest runs this file both on
// the MPI world and over a Forwarding communicator (virtual_world.h), with the same expected times.
TEST(VirtualLayer, WrapsTheCommunicatorItIsGiven) {
  World w = make_world(2);
  EXPECT_EQ(w.comm->virtual_time(), w.vt);
  EXPECT_EQ(w.comm->name(), over_forwarding() ? "forwarding(world)" : "world");
  auto node = w.comm->split(w.comm->node_of(w.comm->rank()), w.comm->rank(), "node");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->virtual_time(), w.vt);  // splits are layered alike
  EXPECT_EQ(node->name(), over_forwarding() ? "forwarding(node)" : "node");
}

}  // namespace
}  // namespace dplab::test
