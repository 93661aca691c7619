// CommMeter's trace events (comm/meter.h) at the end of an epoch (Tracer::between_steps): an
// operation that completes inside the steps is recorded under the step it was posted in; one
// that completes after them (posted in the last step and completed by the drain, or posted at
// the end of the epoch) has no args.step, as metrics.jsonl counts it outside the epochs. Every
// event carries args.bytes and args.wire_bytes. Runs at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../data/temp_dir.h"
#include "common/trace_check.h"
#include "dplab/comm/meter.h"
#include "dplab/comm/mpi_env.h"

namespace dplab {
namespace {

TEST(MeterTrace, CommunicationCompletedAfterTheStepsBelongsToNoStep) {
  std::shared_ptr<Communicator> c = mpi_world();
  const int P = c->size(), rank = c->rank();
  // Every rank its own directory (the same path would do too: the file is rank_R.json).
  test::ScopedTempDir dir(fmt::format("meter-trace-{}", rank));
  trace::TracerOptions o;
  o.dir = dir.file("trace");
  o.steps = "all";
  trace::Tracer t(o);
  trace::RankPlace place;
  place.rank = rank;
  place.world_size = P;
  place.host = "h";
  t.start(place, trace::Clock::now(), 10);
  TrainContext ctx;
  ctx.tracer = &t;
  CommMeter meter(ctx, false);
  Tensor a = Tensor::full({100}, 1.f, DType::f32, Device::cpu());
  Tensor b = Tensor::full({100}, 1.f, DType::f32, Device::cpu());
  Tensor d = Tensor::full({50}, 1.f, DType::f32, Device::cpu());

  t.begin_step(0);
  Pending in_step = meter.iallreduce(*c, "in step", a);
  meter.complete(in_step);
  t.begin_step(1);
  Pending drained = meter.iallreduce(*c, "drained", b);  // posted in the last step
  t.between_steps();                                     // the epoch's steps end
  EXPECT_TRUE(t.outside_steps());
  meter.complete(drained);                 // the drain completes it
  meter.allreduce(*c, "end of epoch", d);  // an end-of-epoch collective
  t.close();

  // Ring allreduce of n bytes: 2(P-1)/P n on this rank's links (P = 1: none, P = 2: n).
  const auto wire = [&](double n) { return 2.0 * (P - 1) / P * n; };
  const nlohmann::json j = test::read_trace(dir.file(fmt::format("trace/rank_{}.json", rank)));
  EXPECT_EQ(j["otherData"]["time_base"], "wall");
  int seen = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    SCOPED_TRACE(e.dump());
    if (name == "in step" || name == "wait in step") {
      EXPECT_EQ(args["step"], 0);
      ++seen;
    } else if (name == "drained" || name == "wait drained" || name == "end of epoch" ||
               name == "wait end of epoch") {
      EXPECT_FALSE(args.contains("step"));
      ++seen;
    }
    if (e["cat"] == "comm") {
      const double n = name == "end of epoch" ? 200 : 400;
      EXPECT_EQ(args["bytes"].get<double>(), n);
      EXPECT_EQ(args["wire_bytes"].get<double>(), wire(n));
    }
  }
  EXPECT_EQ(seen, 6);
  // The counts hold all three (the driver reads them at the epoch's end and at the run's).
  const CommStats s = meter.take_stats();
  EXPECT_EQ(s.bytes_sent, 1000);
  EXPECT_EQ(s.wire_bytes, wire(1000));
  EXPECT_EQ(s.allreduces, 3);
}

}  // namespace
}  // namespace dplab
