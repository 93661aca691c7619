// Issue #19 items 2 and 4 on the CPU: the NCCL device choice as a pure function
// (comm/local_device.h), and the host placement that feeds it computed once at MPI start, so
// asking on some ranks only cannot deadlock (run under mpiexec; a collective query would leave
// rank 0 blocked and the others would time out in the barrier after 20 s, failing the test).
#include <gtest/gtest.h>

#include <cstdlib>

#include "dplab/comm/communicator.h"
#include "dplab/comm/local_device.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

TEST(LocalDevice, OneVisibleGpuPerRankIsDeviceZero) {
  // Slurm --gpus-per-task=1: each of 4 ranks on the host sees one GPU.
  for (int r = 0; r < 4; ++r) {
    const LocalDeviceChoice c = choose_local_device(r, 4, 1);
    EXPECT_EQ(c.device, 0) << "local rank " << r;
    EXPECT_TRUE(c.error.empty());
  }
}

TEST(LocalDevice, AllGpusVisibleGivesTheLocalRank) {
  EXPECT_EQ(choose_local_device(0, 4, 4).device, 0);
  EXPECT_EQ(choose_local_device(3, 4, 4).device, 3);
  EXPECT_EQ(choose_local_device(1, 2, 8).device, 1);
}

TEST(LocalDevice, MoreRanksThanVisibleGpusIsAClearError) {
  const LocalDeviceChoice c = choose_local_device(2, 3, 2);
  EXPECT_EQ(c.device, -1);
  EXPECT_NE(c.error.find("local rank 2 of 3 ranks"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("sees only 2 device(s)"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << c.error;
  const LocalDeviceChoice none = choose_local_device(0, 1, 0);
  EXPECT_EQ(none.device, -1);
  EXPECT_NE(none.error.find("no CUDA device is visible"), std::string::npos) << none.error;
}

TEST(HostPlacement, AskingOnOneRankOnlyDoesNotDeadlock) {
  const MpiEnv& env = MpiEnv::get();
  if (env.world_rank() == 0) {
    for (int i = 0; i < 3; ++i) {  // the old query ran MPI_Comm_split_type on every call
      EXPECT_GE(env.local_rank(), 0);
      EXPECT_LT(env.local_rank(), env.local_size());
    }
  }
  WaitOptions w;
  w.timeout_s = 20;
  CommConfig cfg;
  cfg.wait = w;
  mpi_world(cfg)->barrier();  // throws after 20 s if rank 0 were stuck in a collective
  // CI runs every rank on one host: the placement is the world's, and hydra says so too.
  EXPECT_EQ(env.local_size(), env.world_size());
  EXPECT_EQ(env.local_rank(), env.world_rank());
  if (const char* id = std::getenv("MPI_LOCALRANKID")) {
    EXPECT_EQ(env.local_rank(), std::atoi(id));
  }
}

}  // namespace
}  // namespace dplab
