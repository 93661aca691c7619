// The backends' shared argument checks and request names (issue #32 item 5) on the MPI backend:
// the table of tests/comm/communicator_checks.h, which test_nccl_communicator_checks.cpp runs on
// NCCL. Runs at 1, 2 and 3 ranks.
#include "communicator_checks.h"

#include <gtest/gtest.h>

#include "dplab/comm/communicator.h"
#include "dplab/core/device.h"

namespace dplab {
namespace {

std::shared_ptr<Communicator> world() {
  static std::shared_ptr<Communicator> w = mpi_world();  // MPI_Comm_dup is collective: once
  return w;
}

TEST(CommunicatorChecks, MpiRefusesEveryBadCallNamingOperationAndCommunicator) {
  // A fresh communicator: its collectives are numbered from 1.
  auto c = world()->split(0, world()->rank(), "checks");
  ASSERT_NE(c, nullptr);
  test::CheckTensors k;
  k.to_backend = [](const Tensor& host) { return host; };
  if (cuda_available()) k.foreign = Tensor::zeros({4}, DType::f32, Device::cuda(0));
  test::expect_bad_calls_refused(*c, k);
}

// The gap the shared checks closed: MPI's reduce_scatter took send and recv of different dtypes
// (NCCL refused them), reading the recv buffer as the send's dtype.
TEST(CommunicatorChecks, MpiReduceScatterRefusesMixedDtypes) {
  auto c = world();
  Tensor send = Tensor::zeros({2 * c->size()}, DType::f32);
  Tensor recv = Tensor::zeros({2}, DType::f16);
  try {
    c->reduce_scatter(send, recv);
    ADD_FAILURE() << "reduce_scatter of f32 into f16 did not throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("reduce_scatter on communicator 'world': send f32"), std::string::npos) << m;
    EXPECT_NE(m.find("dtypes differ"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace dplab
