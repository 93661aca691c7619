// comm/device_waits.h off a device: on MPI (and on the CPU, and under virtual time) every figure
// stays the host time the algorithms counted before; nothing is measured or added by take().
// The device side is tests/comm/test_nccl_device_waits.cpp. Runs at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <chrono>

#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/comm/device_waits.h"
#include "dplab/comm/meter.h"
#include "dplab/comm/mpi_env.h"

namespace dplab {
namespace {

std::shared_ptr<Communicator> world() {
  static std::shared_ptr<Communicator> w = mpi_world();
  return w;
}

TEST(DeviceWaits, OffTheDeviceTheHostTimeCounts) {
  auto c = world();
  DeviceWaits waits(Device::cpu(), false);
  EXPECT_FALSE(waits.on_device());
  Tensor t = Tensor::full({100}, float(c->rank() + 1), DType::f32, Device::cpu());
  // A start 50 ms in the past: the host figure is measured from the caller's start (posting
  // included), as the algorithms did before.
  WallTime wall;
  const Stopwatch since(wall, wall.now() - 0.05);
  Request r = waits.post_measured([&] { return c->iallreduce(t, ReduceOp::sum); });
  EXPECT_FALSE(waits.measures(r));
  const double host = complete_measured(r, since, &waits, true);
  EXPECT_GE(host, 0.05);
  EXPECT_LT(host, 5.0);
  EXPECT_EQ(waits.host_flight(r), r.seconds_in_flight());  // the request's own host figure
  const int K = c->size();
  for (float v : t.to_vector()) ASSERT_EQ(v, float(K * (K + 1) / 2));
  CommStats st;
  waits.take(st);  // nothing from a device
  EXPECT_EQ(st.exposed_wait_s, 0.0);
  EXPECT_EQ(st.in_flight_s, 0.0);
}

TEST(DeviceWaits, WithoutDeviceWaitsTheHostTimeCounts) {
  auto c = world();
  Tensor a = Tensor::full({10}, float(c->rank()), DType::f32, Device::cpu());
  Tensor b = Tensor::full({10}, 1.f, DType::f32, Device::cpu());
  WallTime wall;
  const Stopwatch since(wall, wall.now() - 0.02);
  std::vector<Request> reqs{c->iallreduce(a, ReduceOp::sum), c->iallreduce(b, ReduceOp::sum)};
  EXPECT_GE(complete_all_measured(reqs, since, nullptr, false), 0.02);
  EXPECT_EQ(b.to_vector()[0], float(c->size()));
}

// The meter on MPI with a strategy's (CPU) context: the figures are host time, in flight =
// exposed wait for a blocking collective, and the parameters the average (average_parameters,
// local SGD's and SlowMo's exchange).
TEST(DeviceWaits, MeterOnMpiKeepsHostFigures) {
  auto c = world();
  const int K = c->size(), r = c->rank();
  std::vector<NamedTensor> ps{{"w", Tensor::full({30}, float(r + 1), DType::f32, Device::cpu())}};
  ParamArena arena(ps, ParamArena::Layout::given_order);
  TrainContext ctx;
  ctx.arena = &arena;
  CommMeter meter(ctx, false);
  EXPECT_FALSE(meter.device_figures());
  average_parameters(meter, *c, arena);
  const CommStats s = meter.take_stats();
  if (K == 1) {
    EXPECT_EQ(s.allreduces, 0);  // nothing to average
    return;
  }
  EXPECT_EQ(s.allreduces, 1);
  EXPECT_GT(s.exposed_wait_s, 0.0);
  EXPECT_EQ(s.in_flight_s, s.exposed_wait_s);
  for (float v : arena.segments()[0].param.to_vector()) ASSERT_FLOAT_EQ(v, float(K + 1) / 2.0f);
}

}  // namespace
}  // namespace dplab
