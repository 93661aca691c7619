// Issue #32 items 1-2: the communication meter counts calls, payload and wire bytes, and the
// data it moves is the communicator's. Wire bytes are checked against hand values at P = 2, 3,
// 4 and 8 (ctest runs this binary at each): n = 1200 bytes (300 f32), so every (P-1)/P n is an
// integer written out below, not computed by the formula under test.
#include <gtest/gtest.h>

#include <map>

#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/meter.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/wire_bytes.h"
#include "dplab/core/tensor.h"

namespace dplab {
namespace {

// Hand values for n = 1200 bytes: ring allreduce 2(P-1)/P n; reduce-scatter, broadcast and
// reduce (P-1)/P n; allgather of b = 100-byte blocks (P-1) b.
struct Hand {
  double allreduce, scatter, allgather;
};
const std::map<int, Hand> kHand = {
    {1, {0, 0, 0}},        {2, {1200, 600, 100}},  {3, {1600, 800, 200}},
    {4, {1800, 900, 300}}, {8, {2100, 1050, 700}},
};

Hand hand(int P) {
  auto it = kHand.find(P);
  if (it == kHand.end()) ADD_FAILURE() << "no hand values for " << P << " ranks";
  return it == kHand.end() ? Hand{} : it->second;
}

TEST(WireBytes, RingFormulasByHand) {
  using cluster::Op;
  for (const auto& [P, h] : kHand) {
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::allreduce, P, 1200), h.allreduce) << P;
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::reduce_scatter, P, 1200), h.scatter) << P;
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::broadcast, P, 1200), h.scatter) << P;
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::reduce, P, 1200), h.scatter) << P;
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::allgather, P, 100.0 * P), h.allgather) << P;
    EXPECT_DOUBLE_EQ(ring_wire_bytes(Op::barrier, P, 1200), 0) << P;
  }
}

// Hierarchical allreduce per level: reduce-scatter in the node, ring allreduce of n/r across the
// N nodes, allgather in the node.
TEST(WireBytes, HierarchicalPerLevelByHand) {
  // 2 nodes x 2: 600 + 2(1/2)(600) + 600 = 1800 (= the flat ring at 4 ranks).
  EXPECT_DOUBLE_EQ(hierarchical_wire_bytes(2, 2, 1200), 1800);
  // 2 nodes x 4: 900 + 300 + 900 = 2100.
  EXPECT_DOUBLE_EQ(hierarchical_wire_bytes(2, 4, 1200), 2100);
  // 4 nodes x 2: 600 + 2(3/4)(600) + 600 = 2100.
  EXPECT_DOUBLE_EQ(hierarchical_wire_bytes(4, 2, 1200), 2100);
  // 3 nodes x 2: 600 + 2(2/3)(600) + 600 = 2000.
  EXPECT_DOUBLE_EQ(hierarchical_wire_bytes(3, 2, 1200), 2000);
  cluster::Group g{2, 4, 1};
  EXPECT_DOUBLE_EQ(wire_bytes(cluster::Op::allreduce, g, cluster::Algorithm::hierarchical, 1200),
                   2100);
  EXPECT_DOUBLE_EQ(wire_bytes(cluster::Op::allreduce, g, cluster::Algorithm::tree, 1200), 2100);
  EXPECT_DOUBLE_EQ(wire_bytes(cluster::Op::allreduce, g, cluster::Algorithm::ring, 1200), 2100);
}

Tensor filled(int64_t n, float v, DType dt = DType::f32) {
  return Tensor::full({n}, v, dt);
}

TEST(CommMeter, CountsPayloadWireAndCallsOfEachCollective) {
  auto world = mpi_world();
  const int P = world->size(), r = world->rank();
  const Hand h = hand(P);
  CommMeter meter;
  // Allreduce, 300 f32 = 1200 bytes; the data is the sum.
  Tensor a = filled(300, float(r + 1));
  meter.allreduce(*world, "sum", a);
  EXPECT_EQ(a.to_vector()[7], float(P * (P + 1) / 2));
  CommStats s = meter.take_stats();
  EXPECT_DOUBLE_EQ(s.bytes_sent, 1200);
  EXPECT_DOUBLE_EQ(s.wire_bytes, h.allreduce);
  EXPECT_EQ(s.collectives, 1);
  EXPECT_EQ(s.allreduces, 1);
  EXPECT_EQ(s.messages, 0);
  EXPECT_GE(s.exposed_wait_s, 0);
  EXPECT_DOUBLE_EQ(s.in_flight_s, s.exposed_wait_s);  // blocking: compute waited throughout
  // A bf16 wire halves payload and wire bytes.
  Tensor w = filled(300, 1.f);
  meter.allreduce(*world, "bf16", w, ReduceOp::average, DType::bf16);
  s = meter.take_stats();
  EXPECT_DOUBLE_EQ(s.bytes_sent, 600);
  EXPECT_DOUBLE_EQ(s.wire_bytes, h.allreduce / 2);
  // Reduce-scatter of 300 f32 (each rank keeps 300/P: only where P divides 300).
  if (300 % P == 0) {
    Tensor send = filled(300, 1.f), recv = filled(300 / P, 0.f);
    Pending p = meter.ireduce_scatter(*world, "rs", send, recv);
    meter.complete(p);
    EXPECT_EQ(recv.to_vector()[0], float(P));
    s = meter.take_stats();
    EXPECT_DOUBLE_EQ(s.bytes_sent, 1200);
    EXPECT_DOUBLE_EQ(s.wire_bytes, h.scatter);
    EXPECT_EQ(s.collectives, 1);
    EXPECT_EQ(s.allreduces, 0);
  }
  // Allgather of 25 f32 (b = 100 bytes) per rank.
  Tensor send = filled(25, float(r)), recv = filled(25 * P, -1.f);
  meter.allgather(*world, "ag", send, recv);
  for (int q = 0; q < P; ++q) EXPECT_EQ(recv.to_vector()[25 * q + 3], float(q));
  s = meter.take_stats();
  EXPECT_DOUBLE_EQ(s.bytes_sent, 100);
  EXPECT_DOUBLE_EQ(s.wire_bytes, h.allgather);
  // Broadcast of 300 f32 from the last rank.
  Tensor b = filled(300, float(r));
  meter.broadcast(*world, "bcast", b, P - 1);
  EXPECT_EQ(b.to_vector()[0], float(P - 1));
  s = meter.take_stats();
  EXPECT_DOUBLE_EQ(s.bytes_sent, 1200);
  EXPECT_DOUBLE_EQ(s.wire_bytes, h.scatter);
  // Several posts joined into one operation: counts add up, one completion.
  Tensor x = filled(300, 1.f), y = filled(300, 1.f);
  Pending j = meter.iallreduce(*world, "pair", x);
  j.join(meter.iallreduce(*world, "pair", y));
  EXPECT_EQ(j.requests().size(), 2u);
  meter.complete(j);
  EXPECT_TRUE(j.empty());
  s = meter.take_stats();
  EXPECT_EQ(s.collectives, 2);
  EXPECT_DOUBLE_EQ(s.bytes_sent, 2400);
  EXPECT_DOUBLE_EQ(s.wire_bytes, 2 * h.allreduce);
  EXPECT_EQ(meter.take_stats().collectives, 0);  // taken: reset
}

// Point to point: a send puts n on this rank's links; a receive puts nothing.
TEST(CommMeter, PointToPointCountsSendsAsMessages) {
  auto world = mpi_world();
  const int P = world->size(), r = world->rank();
  if (P < 2) GTEST_SKIP() << "needs 2 ranks";
  CommMeter meter;
  Tensor out = filled(300, float(r)), in = filled(300, -1.f);
  Pending p = meter.isend(*world, "ring", out, (r + 1) % P, 7);
  p.join(meter.irecv(*world, "ring", in, (r + P - 1) % P, 7));
  meter.complete(p);
  EXPECT_EQ(in.to_vector()[299], float((r + P - 1) % P));
  const CommStats s = meter.take_stats();
  EXPECT_DOUBLE_EQ(s.bytes_sent, 1200);
  EXPECT_DOUBLE_EQ(s.wire_bytes, 1200);
  EXPECT_EQ(s.messages, 1);
  EXPECT_EQ(s.collectives, 0);
}

// On a virtual cluster whose collectives run hierarchically, an allreduce's wire bytes are the
// hierarchical ones (per level), from the same algorithm choice that times it.
TEST(CommMeter, VirtualClusterHierarchicalAllreduceCountsPerLevel) {
  const int W = MpiEnv::get().world_size();
  if (W < 4 || W % 2 != 0) GTEST_SKIP() << "needs an even number of ranks >= 4";
  cluster::Platform p;
  p.name = "test";
  p.intra = {1e-6, 100e9, 1.0};
  p.nic = {10e-6, 1e9, 1.0};
  p.algorithm = cluster::Algorithm::hierarchical;
  p.validate("test");
  CommConfig cfg;
  cfg.virtual_time = std::make_shared<cluster::VirtualTime>(p, cluster::shape_of(p, W, 2),
                                                            cluster::VirtualClock::Compute::manual);
  auto world = mpi_world(cfg);
  CommMeter meter;
  Tensor a = filled(300, 1.f);
  meter.allreduce(*world, "hier", a);
  EXPECT_EQ(a.to_vector()[0], float(W));
  // W/2 nodes of 2: 600 (in node) + 2 (N-1)/N 600 (across) + 600 (in node).
  const std::map<int, double> hand_hier = {{4, 1800}, {6, 2000}, {8, 2100}};
  EXPECT_DOUBLE_EQ(meter.take_stats().wire_bytes, hand_hier.at(W));
}

}  // namespace
}  // namespace dplab
