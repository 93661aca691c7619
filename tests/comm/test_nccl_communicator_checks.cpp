// The backends' shared argument checks and request names (issue #32 item 5) on NCCL: the table
// of tests/comm/communicator_checks.h, which communicator_checks_test.cpp runs on MPI. Runs at 1
// and 2 ranks; without a CUDA device per rank every rank skips, saying why.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "communicator_checks.h"
#include "dplab/comm/nccl_communicator.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/device.h"
#include "nccl_test_world.h"

namespace dplab {
namespace {

TEST(CommunicatorChecks, NcclRefusesEveryBadCallNamingOperationAndCommunicator) {
  DPLAB_NCCL_TEST_GATE();
  auto world = test::nccl_test_world();
  // A fresh communicator: its collectives are numbered from 1.
  auto c = world->split(0, world->rank(), "checks");
  ASSERT_NE(c, nullptr);
  const Device dev = Device::cuda(nccl_local_device());
  test::CheckTensors k;
  // On the rank's device; synchronised, since the comm stream does not order after the copy.
  k.to_backend = [dev](const Tensor& host) {
    Tensor d = host.to(dev);
    cuda::ScopedDevice on(dev.index);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return d;
  };
  k.foreign = Tensor::zeros({4}, DType::f32);  // the host's memory
  test::expect_bad_calls_refused(*c, k);
}

}  // namespace
}  // namespace dplab
