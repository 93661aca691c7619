#include <fmt/format.h>

#include "dplab/comm/algorithms/allreduce.h"

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/usage_error.h"

namespace dplab {

AllReduceStrategy::AllReduceStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)),
      sync_opt_(GradSyncOptions::from_options(opt, "allreduce.")),
      quorum_(allreduce_option_table().get_string(opt, "allreduce.ft") == "quorum") {
  // A compressor's state (error feedback) is each rank's own: a healed rank could not take it
  // from a peer.
  DPLAB_CHECK_OPTION(!quorum_ || sync_opt_.compress.kind == "none",
                     "option allreduce.ft = quorum: takes allreduce.compress = none (a "
                     "compressor's error feedback is each rank's own, which healing cannot copy)");
}

void AllReduceStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // every rank starts from rank 0's parameters
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
  average_buffers();
}

CommStats AllReduceStrategy::take_stats() {
  CommStats s = sync_ ? sync_->take_stats() : CommStats{};
  s.add(DistributedStrategy::take_stats());
  return s;
}

void AllReduceStrategy::save_algorithm_state(StateDict& out) const {
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void AllReduceStrategy::load_algorithm_state(const StateDict& in) {
  if (sync_) sync_->load_state(in.sub("sync."));
}

std::map<std::string, double> AllReduceStrategy::state() const {
  std::map<std::string, double> s = {
      {"buckets", sync_ ? static_cast<double>(sync_->buckets().size()) : 0.0},
      {"ranks", static_cast<double>(topo_->world().size())},
      {"nodes", static_cast<double>(topo_->num_nodes())}};
  if (sync_) sync_->add_compression_state(s);
  return s;
}

std::vector<std::string> AllReduceStrategy::plan_notes(const RunPlan& plan) const {
  return compression_notes(sync_opt_.compress, plan.steps);  // one synchronisation per step
}

// Every replica is identical after each step: rank 0's model and optimizer; GradSync's
// error-feedback residuals (with compression) averaged.
ReshardPolicy allreduce_reshard_policy(const CheckpointConfig& config) {
  ReshardPolicy p;
  p.reshards = true;
  p.rules.algo = {compression_residuals_rule()};
  const auto c = config.find("allreduce.compress");
  const bool compressed = c != config.end() && c->second != "none";
  p.consensus =
      fmt::format("rank 0's model and optimizer (every replica is identical after each step){}",
                  compressed ? "; the error-feedback residuals averaged" : "");
  return p;
}

}  // namespace dplab
