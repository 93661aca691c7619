// A world communicator in virtual time for the tests of issue #20 (virtual_p2p_test.cpp,
// virtual_collectives_test.cpp): a test platform with round numbers (intra 1 us, 100 GB/s;
// network 10 us, 1 GB/s per interface, one interface per node) and the clock in manual mode, so
// that compute advances only by add_compute() and every expected time is exact arithmetic.
// The ranks of a node share its interface in point-to-point messages (comm/node_port.h).
//
// The virtual cluster is a layer around any communicator (comm/virtual_communicator.h): with
// DPLAB_TEST_VIRTUAL_INNER=forwarding in the environment (ctest's *_over_forwarding entries), the
// world is that layer around a Forwarding communicator, which is not an MPI backend and only
// passes each call on, and the same tests must give the same times.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/node_port.h"
#include "dplab/comm/virtual_communicator.h"
#include "dplab/core/error.h"
#include "forwarding_communicator.h"

namespace dplab::test {

using cluster::VirtualClock;
using cluster::VirtualTime;

constexpr double kAlpha = 10e-6, kB = 1e9;  // network: 10 us, 1 GB/s
constexpr double kAlphaIntra = 1e-6, kBIntra = 100e9;
constexpr int64_t kFloats = 250000;  // n = 1e6 bytes
constexpr double kN = 1e6;

inline cluster::Platform test_platform() {
  cluster::Platform p;
  p.name = "test";
  p.intra = {kAlphaIntra, kBIntra, 1.0};
  p.nic = {kAlpha, kB, 1.0};
  p.validate("test");
  return p;
}

inline bool over_forwarding() {
  const char* v = std::getenv("DPLAB_TEST_VIRTUAL_INNER");
  return v != nullptr && std::strcmp(v, "forwarding") == 0;
}

struct World {
  std::shared_ptr<VirtualTime> vt;
  std::shared_ptr<Communicator> comm;
};

// A fresh world whose clock starts at 0: ranks_per_node 1 (every rank its own node) or 2.
// `events`: stragglers and link changes in virtual time (comm/cluster/events.h).
inline World make_world(int ranks_per_node, cluster::Events events = {}) {
  const int W = MpiEnv::get().world_size();
  cluster::Platform p = test_platform();
  p.events = std::move(events);
  CommConfig cfg;
  cfg.virtual_time = std::make_shared<VirtualTime>(p, cluster::shape_of(p, W, ranks_per_node),
                                                   VirtualClock::Compute::manual);
  cfg.nic_sharing = true;
  if (!over_forwarding()) return World{cfg.virtual_time, mpi_world(cfg)};
  // The same world built by hand: plain MPI with the shape's nodes, a Forwarding communicator
  // around it, and the virtual cluster around that.
  CommConfig plain;
  plain.ranks_per_node = ranks_per_node;
  auto vt = cfg.virtual_time;
  auto inner = std::make_shared<Forwarding>(mpi_world(plain));
  return World{vt, with_virtual_time(inner, vt, NodePort::create(vt->platform, vt->shape, {}))};
}

inline double clock_of(const World& w) {
  return w.vt->clock.now();
}

#define EXPECT_TIME(a, b) EXPECT_NEAR((a), (b), 1e-12 * (b) + 1e-15)

}  // namespace dplab::test
