#include "dplab/comm/algorithms/slowmo.h"

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

SlowMoOptions SlowMoOptions::from_options(const Options& opt) {
  const OptionTable& t = slowmo_option_table();
  SlowMoOptions o;
  o.frequency = t.get_int(opt, "slowmo.frequency");
  o.lr = t.get_double(opt, "slowmo.lr");
  o.momentum = t.get_double(opt, "slowmo.momentum");
  o.sgp_base = t.get_string(opt, "slowmo.base") == "sgp";  // local or sgp
  o.localsgd_frequency = t.get_int(opt, "slowmo.localsgd_frequency");
  // Node workers: fairscale's default with its LocalSGD base; not offered over SGP (below).
  o.node_workers = t.get_bool(opt, "slowmo.node_workers", !o.sgp_base);
  DPLAB_CHECK_OPTION(!(o.node_workers && o.sgp_base),
                     "option slowmo.node_workers: expected false with slowmo.base = sgp (node "
                     "workers are implemented for slowmo.base = local only; with sgp every rank "
                     "is a worker), got '{}'",
                     opt.values().at("slowmo.node_workers"));
  o.round_spans_epochs = t.get_bool(opt, "slowmo.round_spans_epochs");
  return o;
}

namespace {
PeriodicSyncConfig slowmo_rounds(const SlowMoOptions& o) {
  return {.period = o.frequency,
          .round_spans_epochs = o.round_spans_epochs,
          .period_key = "frequency",
          .steps_key = "local_steps",
          .rounds_key = "rounds",
          .period_option = "slowmo.frequency"};
}
}  // namespace

SlowMoStrategy::SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : SlowMoStrategy(std::move(topo), opt, SlowMoOptions::from_options(opt)) {}

SlowMoStrategy::SlowMoStrategy(std::shared_ptr<Topology> topo, const Options& opt,
                               const SlowMoOptions& o)
    : PeriodicSyncStrategy(std::move(topo), slowmo_rounds(o)), opt_(o) {
  if (opt_.sgp_base) sgp_ = std::make_unique<SgpStrategy>(topo_, opt);
}

void SlowMoStrategy::setup(TrainContext& ctx) {
  DPLAB_CHECK(ctx.arena != nullptr && ctx.optimizer != nullptr,
              "slowmo: setup needs the parameter arena and the base optimizer (its lr is γ)");
  PeriodicSyncStrategy::setup(ctx);        // rank 0's model on every rank (SGP base: below)
  if (sgp_) sgp_->setup(ctx);              // broadcasts rank 0's model
  x_start_ = ctx.arena->params().clone();  // x_{0,0}
  g_ = Tensor::zeros(x_start_.shape(), DType::f32, x_start_.device());
  if (opt_.momentum > 0) u_ = Tensor::zeros(x_start_.shape(), DType::f32, x_start_.device());
}

bool SlowMoStrategy::node_workers() const {
  return opt_.node_workers && topology().ranks_per_node() > 1;
}

int SlowMoStrategy::workers() const {
  if (sgp_ || !opt_.node_workers) return world().size();
  return topology().num_nodes();
}

void SlowMoStrategy::average_workers() {
  // The workers' average. Node workers: the ranks of a node hold the same parameters (same
  // start, same averaged gradients, same optimizer), so the average over the nodes is the
  // average over the ranks with the same local rank (the cross communicator): every rank of a
  // node gets the same bytes without a broadcast.
  // While ranks are down, the live workers' average (docs/virtual_cluster.md, "Failures").
  if (opt_.node_workers)
    average_parameters(meter(), topology().cross(), *ctx_.arena, node_worker_live_weight());
  else
    average_parameters(meter(), world(), *ctx_.arena, live_weight());
}

void SlowMoStrategy::sync(RoundEnd) {
  NoGradGuard no_grad;
  const double gamma = ctx_.optimizer->lr();
  DPLAB_CHECK(gamma > 0,
              "slowmo: the base learning rate γ is {} at round {}; the slow momentum update "
              "divides by it (use a schedule that stays above 0)",
              gamma, rounds());
  // Line 7: x_{t,τ}, the exact average, in place in the arena (SGP: the push-sum average, which
  // also resets the push-sum weights to 1).
  Tensor params = ctx_.arena->params();
  if (sgp_)
    sgp_->push_sum_average();
  else
    average_workers();
  // Line 8: u_{t+1} = β u_t + g with g = (x_{t,0} − x_{t,τ}) / γ_t; line 9: x_{t+1,0} =
  // x_{t,0} − α γ_t u_{t+1}. The SGD heavy-ball step on x_start with lr α γ does both.
  g_.copy_(x_start_);
  add_(g_, params, -1.f);
  mul_(g_, static_cast<float>(1.0 / gamma));
  SgdStepArgs a;
  a.lr = static_cast<float>(opt_.lr * gamma);
  a.momentum = static_cast<float>(opt_.momentum);
  a.first_step = rounds() == 0;
  backend_for(x_start_.device()).optim.sgd_step(x_start_, g_, u_, a);
  params.copy_(x_start_);  // every worker starts round t+1 from x_{t+1,0}
}

void SlowMoStrategy::after_backward(const StepInfo& step) {
  if (sgp_) sgp_->after_backward(step);  // SGP's pre-step snapshot (when w != 1)
  // Node workers: the node's ranks average their gradients before every base step (fairscale's
  // backward hook), so they take the same step and act as one worker with the node's batch.
  if (node_workers())
    meter().allreduce(topology().node(), "node gradient average", ctx_.arena->grads(),
                      ReduceOp::average);
}

void SlowMoStrategy::inner_step(const StepInfo& step, bool round_ends) {
  // The SGP base step's gossip (or its local-step bookkeeping); at a round's end the push-sum
  // average replaces this step's gossip.
  if (sgp_ && !round_ends) sgp_->after_step(step);
  // The LocalSGD base's averages inside the round, every localsgd_frequency base steps counted
  // from the round's start; at the round's end the exact average of line 7 takes its place (as
  // fairscale skips it when the slow momentum step's reduce averages anyway).
  const int64_t k = opt_.localsgd_frequency;
  if (!sgp_ && k > 0 && !round_ends && steps_in_round() % k == 0) average_workers();
}

void SlowMoStrategy::drain() {
  average_buffers();
}

CommStats SlowMoStrategy::take_stats() {
  CommStats s = PeriodicSyncStrategy::take_stats();
  if (sgp_) s.add(sgp_->take_stats());
  return s;
}

bool SlowMoStrategy::consensus_eval(const std::function<void()>& evaluate) {
  if (sgp_ && round_spans_epochs()) return sgp_->consensus_eval(evaluate);
  return PeriodicSyncStrategy::consensus_eval(evaluate);
}

std::map<std::string, double> SlowMoStrategy::state() const {
  std::map<std::string, double> m = {{"tau", double(opt_.frequency)},
                                     {"rounds", double(rounds())},
                                     {"workers", double(workers())}};
  if (sgp_) m["push_sum_weight"] = double(sgp_->push_sum_weight());
  return m;
}

void SlowMoStrategy::save_sync_state(StateDict& out) const {
  out.put_tensor("x_start", x_start_);
  if (u_.defined()) out.put_tensor("slow_momentum", u_);
  out.put_string("base", opt_.sgp_base ? "sgp" : "local");
  out.put_int("localsgd_frequency", opt_.sgp_base ? 0 : opt_.localsgd_frequency);
  out.put_int("node_workers", node_workers() ? 1 : 0);
  if (sgp_) {
    StateDict base;
    sgp_->save_state(base);
    out.merge("sgp.", base);
  }
}

void SlowMoStrategy::load_sync_state(const StateDict& in, const RoundPosition&) {
  restore_tensor(in, name(), "x_start", x_start_);
  const bool saved_u = in.has("slow_momentum");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(saved_u == u_.defined(),
              "{}: slowmo state {} a slow momentum buffer but slowmo.momentum is {}", where,
              saved_u ? "has" : "lacks", opt_.momentum);
  if (u_.defined()) restore_tensor(in, name(), "slow_momentum", u_);
  // Checkpoints from before slowmo.base existed have no "base": local SGD.
  const std::string base = in.has("base") ? in.get_string("base") : std::string("local");
  const std::string want = opt_.sgp_base ? "sgp" : "local";
  DPLAB_CHECK(base == want,
              "{}: slowmo state was saved with slowmo.base = {}, but this run has slowmo.base = "
              "{} (the push-sum weights of an SGP base cannot be made up or dropped)",
              where, base, want);
  // Checkpoints from before issue #33 ran the base without averages inside a round and every
  // rank as a worker: a run that would continue them otherwise is refused, naming the option.
  const int64_t k = in.has("localsgd_frequency") ? in.get_int("localsgd_frequency") : 0;
  const int64_t want_k = opt_.sgp_base ? 0 : opt_.localsgd_frequency;
  const char* old = in.has("localsgd_frequency") ? "" : " (saved before the option existed)";
  DPLAB_CHECK(k == want_k,
              "{}: slowmo state was saved with slowmo.localsgd_frequency = {}{}, but this run has "
              "{}: resume with --set slowmo.localsgd_frequency={}",
              where, k, old, want_k, k);
  const bool nw = in.has("node_workers") && in.get_int("node_workers") == 1;
  DPLAB_CHECK(nw == node_workers(),
              "{}: slowmo state was saved with {} worker per {}{}, but this run has {} (set "
              "slowmo.node_workers or --ranks-per-node as the saved run had them)",
              where, "one", nw ? "node" : "rank", old,
              node_workers() ? "one per node" : "one per rank");
  if (sgp_) sgp_->load_state(in.sub("sgp."));
}

std::unique_ptr<Strategy> make_slowmo_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<SlowMoStrategy>(std::move(topo), opt);
}

// An SGP base ("sgp." state) reshards as sgp does.
ReshardPolicy slowmo_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the inner replicas' average (an SGP base: weighted by the push-sum weights, which "
      "restart at 1); x_start and the slow momentum (global) rank 0's; the optimizer's state "
      "averaged");
  p.rules.algo = {{"sgp.ranks", Combine::fresh},
                  {"sgp.weights", Combine::fresh},
                  {"sgp.last_hop", Combine::fresh},
                  compression_residuals_rule()};
  p.rules.set = {{"sgp.push_sum_weight", "1"}};
  p.rules.model_weight = "sgp.push_sum_weight";
  return p;
}

}  // namespace dplab
