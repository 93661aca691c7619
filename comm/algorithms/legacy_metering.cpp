// TEMPORARY (issue #32 migration): the hand-metered helpers, deleted once every algorithm uses
// the meter (comm/meter.h).
#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/comm/stopwatch.h"

namespace dplab {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

CommStats broadcast_model(Communicator& comm, ParamArena& arena,
                          const std::vector<NamedTensor>& buffers, int root, trace::Tracer* tracer,
                          TimeSource* time) {
  CommStats s;
  WallTime wall;  // without a time base: the wall clock
  std::vector<Request> reqs;
  reqs.push_back(comm.ibroadcast(arena.params(), root));
  s.bytes_sent += static_cast<double>(arena.params().nbytes());
  ++s.collectives;
  for (auto& b : buffers) {
    reqs.push_back(comm.ibroadcast(b.tensor, root));
    s.bytes_sent += static_cast<double>(b.tensor.nbytes());
    ++s.collectives;
  }
  const Stopwatch sw(time ? *time : wall);
  trace::BlockingComm traced(reqs.empty() ? nullptr : tracer, "broadcast", "wait broadcast",
                             s.bytes_sent);
  wait_all(reqs);
  s.in_flight_s = s.exposed_wait_s = sw.seconds();
  return s;
}

CommStats average_buffers(Communicator& comm, const std::vector<NamedTensor>& buffers,
                          trace::Tracer* tracer, TimeSource* time) {
  CommStats s;
  if (comm.size() == 1) return s;
  WallTime wall;  // without a time base: the wall clock
  std::vector<Request> reqs;
  for (auto& b : buffers) {
    if (!is_floating(b.tensor.dtype()) || ends_with(b.name, "num_batches_tracked")) continue;
    reqs.push_back(comm.iallreduce(b.tensor, ReduceOp::average));
    s.bytes_sent += static_cast<double>(b.tensor.nbytes());
    ++s.collectives;
    ++s.allreduces;
  }
  const Stopwatch sw(time ? *time : wall);
  trace::BlockingComm traced(reqs.empty() ? nullptr : tracer, "buffer average",
                             "wait buffer average", s.bytes_sent);
  wait_all(reqs);
  s.in_flight_s = s.exposed_wait_s = sw.seconds();
  return s;
}

CommStats average_parameters(Communicator& comm, ParamArena& arena, trace::Tracer* tracer,
                             DeviceWaits* waits, TimeSource* time) {
  CommStats s;
  if (comm.size() == 1) return s;
  WallTime wall;  // without a time base: the wall clock
  const Stopwatch sw(time ? *time : wall);
  trace::BlockingComm traced(tracer, "parameter average", "wait parameter average",
                             static_cast<double>(arena.params().nbytes()));
  // On NCCL the next step's kernels wait for the average on the device, not the host.
  Request r = comm.iallreduce(arena.params(), ReduceOp::average);
  s.in_flight_s = s.exposed_wait_s = complete_measured(r, sw, waits, true);
  s.bytes_sent = static_cast<double>(arena.params().nbytes());
  s.collectives = 1;
  s.allreduces = 1;
  return s;
}

}  // namespace dplab
