// Shared fixture of the NCCL multi-rank tests: whether this job can run NCCL (one device per rank
// on every host; the same answer on every rank, so all ranks skip together) and the NCCL world
// communicator, created by the first test that needs it and destroyed before MPI finalises.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "dplab/comm/nccl_communicator.h"
#include "dplab/core/device.h"

namespace dplab::test {

// Why this job cannot run NCCL ("" when it can).
inline std::string nccl_skip_reason() {
  std::string why;
  if (!cuda_available()) {
    why = cuda_unavailable_reason();
  } else {
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    int local = 1;
    MPI_Comm_size(shm, &local);
    MPI_Comm_free(&shm);
    if (local > cuda_device_count())
      why = fmt::format("no CUDA device for every rank: {} ranks on this host, {} device(s)", local,
                        cuda_device_count());
  }
  int skip = why.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (skip && why.empty()) why = "another rank has no CUDA device";
  return why;
}

struct NcclWorldEnvironment : testing::Environment {
  std::shared_ptr<Communicator> world;
  void TearDown() override { world.reset(); }
};

// Registered during static initialisation, before RUN_ALL_TESTS, so its TearDown runs before
// MPI is finalised (an inline variable: one per test binary).
inline NcclWorldEnvironment* const nccl_world_environment =
    static_cast<NcclWorldEnvironment*>(testing::AddGlobalTestEnvironment(new NcclWorldEnvironment));

// The NCCL world of this test binary.
inline std::shared_ptr<Communicator> nccl_test_world() {
  if (!nccl_world_environment->world) nccl_world_environment->world = nccl_world();
  return nccl_world_environment->world;
}

}  // namespace dplab::test
