#include "dplab/comm/algorithms/local_sgd.h"

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/core/usage_error.h"

namespace dplab {

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

LocalSgdStrategy::LocalSgdStrategy(const Options& opt, bool post_local)
    : LocalSgdStrategy(std::make_shared<Topology>(Topology::from_options(opt)), opt, post_local) {}

LocalSgdStrategy::LocalSgdStrategy(std::shared_ptr<Topology> topo, const Options& opt,
                                   bool post_local)
    : topo_(std::move(topo)), post_local_(post_local), H_(opt.get_int("local_sgd.H", 4)) {
  DPLAB_CHECK_OPTION(H_ >= 1, "option local_sgd.H: expected >= 1, got {}", H_);
  if (post_local_) {
    switch_epoch_ = opt.get_int("post_local_sgd.switch_epoch", 1);
    DPLAB_CHECK_OPTION(switch_epoch_ >= 0,
                       "option post_local_sgd.switch_epoch: expected >= 0, got {}", switch_epoch_);
    sync_opt_ = GradSyncOptions::from_options(opt, "allreduce.");
  }
}

void LocalSgdStrategy::setup(TrainContext& ctx) {
  Strategy::setup(ctx);
  DPLAB_CHECK(ctx.arena != nullptr, "{}: setup needs the parameter arena", name());
  stats_.add(
      broadcast_model(topo_->world(), *ctx.arena, ctx.buffers, 0, ctx.tracer, ctx.time.get()));
  device_waits_ = DeviceWaits(ctx.arena->device(), topo_->world().virtual_time() != nullptr);
  if (post_local_)
    sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->world_ptr(), sync_opt_, topo_->node_ptr(),
                                       topo_->cross_ptr());
  if (sync_) sync_->set_tracer(ctx.tracer);
}

void LocalSgdStrategy::begin_epoch(int64_t epoch) {
  grad_phase_ = post_local_ && epoch < switch_epoch_;
  // After the switch the grad-ready hooks must not communicate.
  if (sync_) sync_->set_no_sync(!grad_phase_);
}

void LocalSgdStrategy::after_backward(const StepInfo&) {
  if (grad_phase_) sync_->finish();
}

void LocalSgdStrategy::average() {
  stats_.add(average_parameters(topo_->world(), *ctx_.arena, ctx_.tracer, &device_waits_,
                                ctx_.time.get()));
  ++averages_;
  since_avg_ = 0;
}

void LocalSgdStrategy::after_step(const StepInfo& step) {
  if (grad_phase_) return;  // AllReduce-SGD: ranks are identical after every step
  ++since_avg_;
  if (since_avg_ == H_ || step.last_in_epoch()) average();
}

void LocalSgdStrategy::finish_training() {
  // A run stopped mid-period (max_steps): every rank stops at the same step, so all reach this.
  if (!grad_phase_ && since_avg_ > 0) average();
}

void LocalSgdStrategy::drain() {
  stats_.add(average_buffers(topo_->world(), ctx_.buffers, ctx_.tracer, ctx_.time.get()));
}

CommStats LocalSgdStrategy::take_stats() {
  CommStats s = sync_ ? sync_->take_stats() : CommStats{};
  s.add(stats_);
  device_waits_.take(s);
  stats_ = {};
  return s;
}

void LocalSgdStrategy::save_state(StateDict& out) const {
  save_algorithm_name(out, name());
  out.put_int("H", H_);
  out.put_int("since_average", since_avg_);
  out.put_int("averages", averages_);
  out.put_bool("allreduce_phase", grad_phase_);
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void LocalSgdStrategy::load_state(const StateDict& in) {
  check_algorithm_name(in, name());
  // The period in progress only makes sense with the same H.
  state_int(in, name(), "H", H_, H_);
  const int64_t since = state_int(in, name(), "since_average", 0, H_ - 1);
  const int64_t averages = state_int(in, name(), "averages", 0, INT64_MAX);
  const bool phase = in.get_bool("allreduce_phase");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(post_local_ || !phase,
              "{}: local_sgd state 'allreduce_phase' is true (only post-local SGD has one)", where);
  DPLAB_CHECK(!phase || since == 0,
              "{}: {} state: 'since_average' = {} during the allreduce phase (expected 0)", where,
              name(), since);
  since_avg_ = since;
  averages_ = averages;
  grad_phase_ = phase;
  if (sync_) sync_->set_no_sync(!grad_phase_);
  if (sync_) sync_->load_state(in.sub("sync."));
}

std::map<std::string, double> LocalSgdStrategy::state() const {
  return {{"H", double(H_)}, {"averages", double(averages_)}, {"phase", grad_phase_ ? 0.0 : 1.0}};
}

std::unique_ptr<Strategy> make_local_sgd_strategy(const Options& opt) {
  return std::make_unique<LocalSgdStrategy>(opt, false);
}
std::unique_ptr<Strategy> make_post_local_sgd_strategy(const Options& opt) {
  return std::make_unique<LocalSgdStrategy>(opt, true);
}

}  // namespace dplab
