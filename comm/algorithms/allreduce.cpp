#include "dplab/comm/algorithms/allreduce.h"

#include "dplab/comm/algorithms/algo_state.h"
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

AllReduceStrategy::AllReduceStrategy(const Options& opt)
    : AllReduceStrategy(std::make_shared<Topology>(Topology::from_options(opt)), opt) {}

AllReduceStrategy::AllReduceStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : topo_(std::move(topo)), sync_opt_(GradSyncOptions::from_options(opt, "allreduce.")) {}

void AllReduceStrategy::setup(TrainContext& ctx) {
  Strategy::setup(ctx);
  DPLAB_CHECK(ctx.arena != nullptr, "allreduce: setup needs the parameter arena");
  // Common rule: every rank starts from rank 0's parameters.
  extra_.add(
      broadcast_model(topo_->world(), *ctx.arena, ctx.buffers, 0, ctx.tracer, ctx.time.get()));
  sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->world_ptr(), sync_opt_, topo_->node_ptr(),
                                     topo_->cross_ptr());
  sync_->set_tracer(ctx.tracer);
}

void AllReduceStrategy::after_backward(const StepInfo&) {
  DPLAB_CHECK(sync_ != nullptr, "allreduce: after_backward before setup");
  sync_->finish();
}

void AllReduceStrategy::drain() {
  // Nothing is in flight between steps; the evaluated model is every rank's (identical)
  // parameters with BatchNorm running statistics averaged over the ranks.
  extra_.add(average_buffers(topo_->world(), ctx_.buffers, ctx_.tracer, ctx_.time.get()));
}

CommStats AllReduceStrategy::take_stats() {
  CommStats s = sync_ ? sync_->take_stats() : CommStats{};
  s.add(extra_);
  extra_ = {};
  return s;
}

void AllReduceStrategy::save_state(StateDict& out) const {
  save_algorithm_name(out, name());
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void AllReduceStrategy::load_state(const StateDict& in) {
  check_algorithm_name(in, name());
  if (sync_) sync_->load_state(in.sub("sync."));
}

std::map<std::string, double> AllReduceStrategy::state() const {
  return {{"buckets", sync_ ? static_cast<double>(sync_->buckets().size()) : 0.0},
          {"ranks", static_cast<double>(topo_->world().size())},
          {"nodes", static_cast<double>(topo_->num_nodes())}};
}

}  // namespace dplab
