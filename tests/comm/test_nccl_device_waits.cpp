// The algorithms' own waits on NCCL measured on the device (comm/device_waits.h; issue #19,
// items 3 and 10). Each test holds the comm stream up for 200 ms (a host function) before the
// communication, so the compute stream stalls for about that long while the host only posts;
// the figures must show the stall, from the device, and the host figure must be 0. Every rank
// skips (together) without a CUDA device per rank; the point-to-point and average_parameters
// tests need 2 ranks.
#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "dplab/comm/device_waits.h"
#include "dplab/comm/meter.h"
#include "dplab/comm/nccl_communicator.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/device.h"
#include "nccl_test_world.h"

namespace dplab {
namespace {

Device dev() {
  return Device::cuda(nccl_local_device());
}

void sleep_200ms(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

void hold_comm_stream() {
  ASSERT_EQ(cudaLaunchHostFunc(cuda::comm_stream(dev().index), sleep_200ms, nullptr), cudaSuccess);
}

void sync_device() {
  cuda::ScopedDevice on(dev().index);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// One collective waited for on the host first: the communicator's set-up (NCCL initialises
// lazily) must not fall inside the intervals the tests time.
void warm_up(Communicator& c) {
  Tensor one = Tensor::full({1}, 1.f, DType::f32, dev());
  c.iallreduce(one, ReduceOp::sum).wait();
  sync_device();
}

// A device tensor of n copies of v, landed before the comm stream reads it.
Tensor device_full(int64_t n, float v) {
  Tensor t = Tensor::full({n}, v, DType::f32, dev());
  sync_device();
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A blocking collective (DASO's global sync and broadcast, Crossover's broadcast, DiLoCo):
// complete_measured(blocking) counts the stall as exposed wait and as time in flight.
TEST(NcclDeviceWaits, BlockingWaitComesFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = test::nccl_test_world();
  const int K = c->size(), r = c->rank();
  warm_up(*c);
  Tensor t = device_full(1000, float(r + 1));
  DeviceWaits waits(dev(), false);
  ASSERT_TRUE(waits.on_device());
  hold_comm_stream();
  const auto t0 = Clock::now();
  WallTime wall;
  Request req = c->iallreduce(t, ReduceOp::sum);
  EXPECT_TRUE(waits.measures(req));
  EXPECT_EQ(complete_measured(req, Stopwatch(wall), &waits, true), 0.0);  // nothing on the host
  const double host_s = seconds_since(t0);
  sync_device();
  CommStats st;
  waits.take(st);
  EXPECT_GE(st.exposed_wait_s, 0.15) << "host time posting and waiting: " << host_s;
  EXPECT_LT(st.exposed_wait_s, 5.0);
  EXPECT_GE(st.in_flight_s, 0.15);
  EXPECT_LT(st.in_flight_s, 5.0);
  for (float v : t.to_vector()) ASSERT_EQ(v, float(K * (K + 1) / 2));
  CommStats next;  // each interval counted once
  waits.take(next);
  EXPECT_EQ(next.exposed_wait_s, 0.0);
  EXPECT_EQ(next.in_flight_s, 0.0);
}

// A non-blocking operation waited for later (DASO's merge, DC-S3GD, streaming DiLoCo): time in
// flight from post_measured (compute stream at posting to the comm stream after the operation),
// the exposed wait from complete_measured(not blocking); neither counted twice.
TEST(NcclDeviceWaits, PostedOperationFlightAndWaitComeFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = test::nccl_test_world();
  const int K = c->size(), r = c->rank();
  warm_up(*c);
  Tensor t = device_full(1000, float(r + 1));
  DeviceWaits waits(dev(), false);
  hold_comm_stream();
  Request req = waits.post_measured([&] { return c->iallreduce(t, ReduceOp::sum); });
  EXPECT_EQ(waits.host_flight(req), 0.0);
  WallTime wall;
  EXPECT_EQ(complete_measured(req, Stopwatch(wall), &waits, false), 0.0);
  sync_device();
  CommStats st;
  waits.take(st);
  EXPECT_GE(st.exposed_wait_s, 0.15);
  EXPECT_LT(st.exposed_wait_s, 0.35);  // only the wait's interval, not the flight's too
  EXPECT_GE(st.in_flight_s, 0.15);
  EXPECT_LT(st.in_flight_s, 0.35);  // only the flight's interval, not the wait's too
  for (float v : t.to_vector()) ASSERT_EQ(v, float(K * (K + 1) / 2));
}

// Point-to-point exchanges (SGP's and Crossover's gossip): complete_all_measured over a ring.
// Needs 2 ranks (NCCL point-to-point to oneself is refused).
TEST(NcclDeviceWaits, GossipExchangeWaitComesFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = test::nccl_test_world();
  const int K = c->size(), r = c->rank();
  if (K < 2) GTEST_SKIP() << "a gossip exchange needs 2 ranks";
  warm_up(*c);
  Tensor send = device_full(500, float(r + 1));
  Tensor recv = device_full(500, 0.f);
  DeviceWaits waits(dev(), false);
  hold_comm_stream();
  WallTime wall;
  const Stopwatch sw(wall);
  std::vector<Request> reqs;
  reqs.push_back(c->irecv(recv, (r + K - 1) % K, 7));
  reqs.push_back(c->isend(send, (r + 1) % K, 7));
  EXPECT_EQ(complete_all_measured(reqs, sw, &waits, true), 0.0);
  sync_device();
  CommStats st;
  waits.take(st);
  EXPECT_GE(st.exposed_wait_s, 0.15);
  EXPECT_GE(st.in_flight_s, 0.15);
  for (float v : recv.to_vector()) ASSERT_EQ(v, float((r + K - 1) % K + 1));
}

// The meter with a strategy's device context (every algorithm's collectives, e.g. local SGD's
// average_parameters): the host figure complete_blocking returns is 0 and the device's come
// through take_stats(). Needs 2 ranks (1 rank does not communicate).
TEST(NcclDeviceWaits, MeterWaitComesFromTheDevice) {
  DPLAB_NCCL_TEST_GATE();
  auto c = test::nccl_test_world();
  const int K = c->size(), r = c->rank();
  if (K < 2) GTEST_SKIP() << "the average communicates only with 2 ranks or more";
  warm_up(*c);
  std::vector<NamedTensor> ps{{"w", Tensor::full({300}, float(r + 1), DType::f32, dev())}};
  ParamArena arena(ps, ParamArena::Layout::given_order);
  sync_device();
  TrainContext ctx;
  ctx.arena = &arena;
  CommMeter meter(ctx, false);
  ASSERT_TRUE(meter.device_figures());
  hold_comm_stream();
  const auto t0 = std::chrono::steady_clock::now();
  Pending p = meter.iallreduce(*c, "parameter average", arena.params(), ReduceOp::average);
  EXPECT_EQ(meter.complete_blocking(p), 0.0);
  const double host_s = seconds_since(t0);
  sync_device();
  const CommStats st = meter.take_stats(true);
  EXPECT_EQ(st.allreduces, 1);
  EXPECT_GE(st.exposed_wait_s, 0.15) << "host time: " << host_s;
  EXPECT_GE(st.in_flight_s, 0.15);
  for (float v : arena.segments()[0].param.to_vector()) ASSERT_FLOAT_EQ(v, float(K + 1) / 2.0f);
}

}  // namespace
}  // namespace dplab
