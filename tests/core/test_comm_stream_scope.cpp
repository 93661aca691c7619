// CommStreamScope and StreamMark on the CPU (core/comm_stream_scope.h): one stream of work, so
// they change nothing and the work inside gives its values. The same assertions run on a device
// in CudaCommStream.ScopedKernelsRunPastAHeldComputeStream (tests/cuda/test_cuda_comm_stream.cpp),
// which also checks that the work ran on the comm stream while the compute stream was held.
#include <gtest/gtest.h>

#include "common/comm_stream_work.h"
#include "dplab/core/comm_stream_scope.h"

namespace dplab {
namespace {

TEST(CommStreamScope, WorkInsideGivesItsValuesOnTheCpu) {
  const Device d = Device::cpu();
  const Tensor src = Tensor::from_vector(test::scoped_work_input(), {5});
  StreamMark mark(d, DeviceStream::compute);
  mark.record();
  Tensor out;
  StreamMark end(d, DeviceStream::comm);
  {
    CommStreamScope scope(d, &mark);
    out = test::scoped_work(src);
    end.record();
  }
  end.make_wait(DeviceStream::compute);
  EXPECT_EQ(out.device(), d);
  EXPECT_EQ(out.to_vector(), test::scoped_work_expected());
}

}  // namespace
}  // namespace dplab
