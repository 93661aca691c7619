// CommStreamScope on a device (core/comm_stream_scope.h, issue #34: hierarchical GradSync's
// stage kernels on the communication stream). The CPU twin, with the same value assertions, is
// CommStreamScope.WorkInsideGivesItsValuesOnTheCpu (tests/core/test_comm_stream_scope.cpp).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "common/comm_stream_work.h"
#include "common/cuda_gate.h"
#include "common/stream_gate.h"
#include "dplab/core/comm_stream_scope.h"
#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#include "dplab/core/error.h"
#include "dplab/core/ops/linear.h"

namespace dplab {
namespace {

const Device kDev = Device::cuda(0);

// cudaStreamQuery, leaving no cudaErrorNotReady behind for the next launch.
bool stream_done(cudaStream_t s) {
  const cudaError_t e = cudaStreamQuery(s);
  if (e == cudaErrorNotReady) (void)cudaGetLastError();
  return e == cudaSuccess;
}

Tensor device_input() {
  Tensor src = Tensor::from_vector(test::scoped_work_input(), {5}).to(kDev);
  cuda::wait_stream(cuda::compute_stream(0), "test input", 60);
  return src;
}

// A bucket's gradients are ready at a mark; backward goes on (the gate holds the compute stream
// behind it). The work inside the scope waits for the mark only: it finishes on the comm stream
// while the compute stream is still held, and gives the CPU twin's values once compute is
// ordered after it.
TEST(CudaCommStream, ScopedKernelsRunPastAHeldComputeStream) {
  DPLAB_CUDA_TEST_GATE();
  const Tensor src = device_input();
  StreamMark ready(kDev, DeviceStream::compute), end(kDev, DeviceStream::comm);
  ready.record();
  test::StreamGate backward(cuda::compute_stream(0));
  Tensor out;
  {
    CommStreamScope scope(kDev, &ready);
    EXPECT_EQ(cuda::launch_stream(0), cuda::comm_stream(0));
    out = test::scoped_work(src);
    end.record();
  }
  EXPECT_EQ(cuda::launch_stream(0), cuda::compute_stream(0)) << "the scope is over";
  // Throws after 20 s if the scope's work waits for the held compute stream.
  cuda::wait_stream(cuda::comm_stream(0), "the scope's work on the comm stream", 20);
  EXPECT_FALSE(stream_done(cuda::compute_stream(0))) << "the gate still holds compute";
  end.make_wait(DeviceStream::compute);
  backward.release();
  EXPECT_EQ(out.to_vector(), test::scoped_work_expected());
}

// A mark of the comm stream made the compute stream's wait: compute work enqueued after it waits
// for the scope's work (the comm stream is held here), without a host wait.
TEST(CudaCommStream, ComputeAfterTheEndMarkWaitsForTheScopesWork) {
  DPLAB_CUDA_TEST_GATE();
  const Tensor src = device_input();
  test::StreamGate comm(cuda::comm_stream(0));
  StreamMark end(kDev, DeviceStream::comm);
  Tensor out;
  {
    CommStreamScope scope(kDev);
    out = test::scoped_work(src);
    end.record();
  }
  end.make_wait(DeviceStream::compute);
  Tensor copy = Tensor::empty({5}, DType::f32, kDev);
  copy.copy_(out);  // on the compute stream, behind the ordering
  EXPECT_FALSE(stream_done(cuda::compute_stream(0))) << "compute ran before the held comm work";
  comm.release();
  EXPECT_EQ(copy.to_vector(), test::scoped_work_expected());
}

// Inside a scope the caching allocator serves the comm stream's pool: a block released there
// comes back to the next allocation inside a scope, never to one for the compute stream.
TEST(CudaCommStream, ScopedAllocationsUseTheCommStreamsPool) {
  DPLAB_CUDA_TEST_GATE();
  auto& alloc = cuda::device_allocator(0);
  const size_t bytes = (size_t(3) << 20) + 512;  // a large block: its own 20 MiB segment
  void* inside = nullptr;
  {
    CommStreamScope scope(kDev);
    inside = alloc.allocate(bytes);
    alloc.release(inside);
  }
  void* outside = alloc.allocate(bytes);
  EXPECT_NE(outside, inside) << "a comm-stream block served the compute stream";
  alloc.release(outside);
  {
    CommStreamScope scope(kDev);
    void* again = alloc.allocate(bytes);
    EXPECT_EQ(again, inside) << "the comm stream's cached block";
    alloc.release(again);
  }
}

// cuBLAS's handle is bound to the compute stream: inside a scope a matmul refuses, naming the
// scope, instead of running unordered with the scope's work.
TEST(CudaCommStream, CublasRefusesInsideAScope) {
  DPLAB_CUDA_TEST_GATE();
  const Tensor a = Tensor::ones({4, 4}, DType::f32, kDev);
  CommStreamScope scope(kDev);
  try {
    (void)matmul(a, a);
    FAIL() << "matmul ran inside a CommStreamScope";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CommStreamScope"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dplab
