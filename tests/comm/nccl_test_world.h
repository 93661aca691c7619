// Shared fixture of the NCCL multi-rank tests: whether this job can run NCCL (a device of its own
// for every rank; the same answer on every rank, so all ranks skip or fail together) and the NCCL
// world communicator, created by the first test that needs it and destroyed before MPI
// finalises.
//
// The decision is tests/common/cuda_gate.h's (no device: skip, or fail under
// DPLAB_REQUIRE_CUDA=1; a broken driver: fail), plus one NCCL condition: two ranks of the job
// must not end up on one GPU (more ranks on a host than devices, when every rank sees them all).
// That is a skip even under DPLAB_REQUIRE_CUDA (the device check runs 2 ranks only with 2
// GPUs). Skips print kNcclSkipMarker, which ctest's SKIP_REGULAR_EXPRESSION matches
// (tests/comm/CMakeLists.txt); failure texts never contain it, so a failure is never taken for
// a skip.
#pragma once
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>

#include "common/cuda_gate.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/nccl_communicator.h"
#include "dplab/core/device.h"

namespace dplab::test {

inline constexpr const char* kNcclSkipMarker = "dplab-nccl-skip: ";

// Why two ranks of this job would share a GPU ("" when none would): every rank names its
// host and its device's PCI bus id.
inline std::string shared_gpu_reason(int device) {
  char id[64] = {0};
  char host[64] = {0};
  if (device >= 0) cudaDeviceGetPCIBusId(id, sizeof(id) - 1, device);
  gethostname(host, sizeof(host) - 1);
  const std::string mine = device >= 0 ? std::string(host) + "/" + id : std::string();
  char buf[128] = {0};
  std::snprintf(buf, sizeof(buf), "%s", mine.c_str());
  const int n = MpiEnv::get().world_size();
  std::vector<char> all(static_cast<size_t>(n) * sizeof(buf));
  MPI_Allgather(buf, sizeof(buf), MPI_CHAR, all.data(), sizeof(buf), MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> seen;
  for (int r = 0; r < n; ++r) {
    const std::string g(&all[static_cast<size_t>(r) * sizeof(buf)]);
    if (g.empty()) continue;
    if (!seen.insert(g).second)
      return fmt::format("no GPU of its own for every rank: two ranks would share {}", g);
  }
  return {};
}

// The agreed decision for this job (collective: every rank calls it in every test).
inline CudaGateDecision nccl_gate() {
  CudaGateDecision d = cuda_gate();
  int device = -1;
  if (d.gate == CudaGate::run) {
    try {
      device = nccl_local_device();
    } catch (const std::exception& e) {
      d = {CudaGate::skip, e.what()};
    }
  }
  if (d.gate == CudaGate::run) {
    const std::string shared = shared_gpu_reason(device);
    if (!shared.empty()) d = {CudaGate::skip, shared};
  } else {
    shared_gpu_reason(-1);  // the others gather too
  }
  const int mine = d.gate == CudaGate::run ? 0 : d.gate == CudaGate::skip ? 1 : 2;
  int worst = mine;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == 0) return d;
  if (worst == 2 && mine != 2) return {CudaGate::fail, "another rank failed its CUDA check"};
  if (worst == 1 && mine == 0) d = {CudaGate::skip, "another rank cannot run NCCL"};
  if (d.gate == CudaGate::skip) d.message = kNcclSkipMarker + d.message;
  return d;
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

// Skips or fails the current test on every rank as nccl_gate() decides.
#define DPLAB_NCCL_TEST_GATE()                                                                  \
  do {                                                                                          \
    const ::dplab::test::CudaGateDecision dplab_gate_ = ::dplab::test::nccl_gate();             \
    if (dplab_gate_.gate == ::dplab::test::CudaGate::skip) GTEST_SKIP() << dplab_gate_.message; \
    if (dplab_gate_.gate == ::dplab::test::CudaGate::fail) GTEST_FAIL() << dplab_gate_.message; \
  } while (0)
