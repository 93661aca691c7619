// A world communicator in virtual time for the tests of issue #20 (virtual_p2p_test.cpp,
// virtual_collectives_test.cpp): a test platform with round numbers (intra 1 us, 100 GB/s;
// network 10 us, 1 GB/s per interface, one interface per node) and the clock in manual mode, so
// that compute advances only by add_compute() and every expected time is exact arithmetic.
// The ranks of a node share its interface in point-to-point messages (comm/node_port.h).
#pragma once
#include <gtest/gtest.h>

#include <memory>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"

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

struct World {
  std::shared_ptr<VirtualTime> vt;
  std::shared_ptr<Communicator> comm;
};

// A fresh world whose clock starts at 0: ranks_per_node 1 (every rank its own node) or 2.
inline World make_world(int ranks_per_node) {
  const int W = MpiEnv::get().world_size();
  const cluster::Platform p = test_platform();
  CommConfig cfg;
  cfg.virtual_time = std::make_shared<VirtualTime>(p, cluster::shape_of(p, W, ranks_per_node),
                                                   VirtualClock::Compute::manual);
  cfg.nic_sharing = true;
  World w{cfg.virtual_time, mpi_world(cfg)};
  return w;
}

inline double clock_of(const World& w) {
  return w.vt->clock.now();
}

#define EXPECT_TIME(a, b) EXPECT_NEAR((a), (b), 1e-12 * (b) + 1e-15)

}  // namespace dplab::test
