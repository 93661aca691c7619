#include "dplab/comm/algorithms/daso.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/error.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

// ---- configuration -------------------------------------------------------------------------

DasoConfig DasoConfig::from_options(const Options& opt) {
  const OptionTable& t = daso_option_table();
  DasoConfig c;
  c.B_max = static_cast<int>(t.get_int(opt, "daso.B_max"));
  c.S_init = static_cast<int>(t.get_int(opt, "daso.S"));
  c.warmup_epochs = t.get_int(opt, "daso.warmup_epochs");
  c.cooldown_epochs = t.get_int(opt, "daso.cooldown_epochs");
  c.plateau_threshold = t.get_double(opt, "daso.plateau_threshold");
  c.plateau_patience = static_cast<int>(t.get_int(opt, "daso.plateau_patience"));
  c.halve_S = t.get_string(opt, "daso.S_reduction") == "halve";
  c.phases = t.get_bool(opt, "daso.phases");
  c.epoch_end_sync = t.get_bool(opt, "daso.epoch_end_sync");
  c.blocking_wire = parse_dtype(t.get_string(opt, "daso.blocking_wire"));
  c.global_wire = parse_dtype(t.get_string(opt, "daso.global_wire"));
  return c;
}

DasoPhase daso_phase(int64_t epoch, int64_t total_epochs, const DasoConfig& cfg) {
  if (!cfg.phases) return DasoPhase::cycling;
  if (epoch < cfg.warmup_epochs) return DasoPhase::warmup;
  if (epoch >= total_epochs - cfg.cooldown_epochs) return DasoPhase::cooldown;
  return DasoPhase::cycling;
}

// ---- the schedule of one epoch --------------------------------------------------------------

std::vector<DasoSync> daso_epoch_schedule(int64_t T, DasoPhase phase, int B, int S, int G,
                                          bool epoch_end_sync) {
  DPLAB_CHECK(T >= 1, "daso schedule: batches per epoch must be >= 1, got {}", T);
  DPLAB_CHECK(G >= 1, "daso schedule: ranks per node must be >= 1, got {}", G);
  std::vector<DasoSync> out;
  // Round-robin over the global groups, restarting at group 0 every epoch.
  auto add = [&](int64_t send, int64_t s) {
    DasoSync d;
    d.send_batch = send;
    d.merge_batch = send + s;
    d.group = static_cast<int>(out.size() % static_cast<size_t>(G));
    d.S = static_cast<int>(s);
    out.push_back(d);
  };
  if (phase != DasoPhase::cycling) {
    // Warm-up / cool-down: "all synchronization steps are performed after each batch".
    for (int64_t t = 0; t < T; ++t) add(t, 0);
    return out;
  }
  DPLAB_CHECK(B >= 1, "daso schedule: B must be >= 1, got {}", B);
  DPLAB_CHECK(S >= 0, "daso schedule: S must be >= 0, got {}", S);
  // Sends at t % B == 0; the receive is clipped to the epoch's last batch (S' = min(S, T-1-t)),
  // so nothing is pending across an epoch boundary; S' = 0 is a blocking plain average.
  for (int64_t t = 0; t < T; t += B) add(t, std::min<int64_t>(S, T - 1 - t));
  if (epoch_end_sync && (T - 1) % B != 0) add(T - 1, 0);
  return out;
}

// ---- the B/S cycle ---------------------------------------------------------------------------

// PlateauDetector fires on its `patience`-th bad epoch; DASO's patience counts like PyTorch's
// (a plateau is the (patience+1)-th bad epoch), as in the authors' DetectMetricPlateau.
DasoCycle::DasoCycle(const DasoConfig& cfg)
    : cfg_(cfg),
      detector_(cfg.plateau_threshold, cfg.plateau_patience + 1),
      B_(cfg.B_max),
      S_(cfg.S_init) {}

bool DasoCycle::end_epoch(int64_t epoch, int64_t total_epochs, double loss) {
  if (!cfg_.phases || daso_phase(epoch, total_epochs, cfg_) != DasoPhase::cycling) return false;
  if (!detector_.observe(loss)) return false;
  ++plateaus_;
  if (B_ <= 1 && S_ <= 1) {
    // "When B, S = 1 and the loss has plateaued, both are reset to their initial values."
    B_ = cfg_.B_max;
    S_ = cfg_.S_init;
  } else {
    // "When the training loss plateaus, B and S are reduced by a factor of two, down to a
    // minimum of one." (S = 0, a blocking configuration, stays 0.)
    B_ = std::max(1, B_ / 2);
    if (S_ > 0) S_ = cfg_.halve_S ? std::max(1, S_ / 2) : std::max(1, S_ - 1);
  }
  return true;
}

void DasoCycle::save_state(StateDict& out) const {
  out.put_int("B", B_);
  out.put_int("S", S_);
  out.put_int("plateaus", plateaus_);
  StateDict det;
  detector_.save_state(det);
  out.merge("detector.", det);
}

void DasoCycle::load_state(const StateDict& in) {
  // B and S only ever move down from (B_max, S_init) and back: other values belong to another
  // configuration.
  const int64_t b = state_int(in, "daso", "B", 1, cfg_.B_max);
  const int64_t s = cfg_.S_init == 0 ? state_int(in, "daso", "S", 0, 0)
                                     : state_int(in, "daso", "S", 1, cfg_.S_init);
  const int64_t p = state_int(in, "daso", "plateaus", 0, INT32_MAX);
  detector_.load_state(in.sub("detector."));
  B_ = int(b);
  S_ = int(s);
  plateaus_ = int(p);
}

// ---- the strategy ----------------------------------------------------------------------------

DasoStrategy::DasoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)),
      cfg_(DasoConfig::from_options(opt)),
      local_opt_(GradSyncOptions::from_options(opt, "daso.local.")),
      cycle_(cfg_) {
  DPLAB_CHECK_OPTION(
      !local_opt_.hierarchical,
      "option daso.local.hierarchical: the node-local gradient sync is flat by design");
}

void DasoStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // common rule: every rank starts from rank 0's parameters
  // Local synchronization: node-local gradient average every batch, overlapped with backward.
  local_sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->node_ptr(), local_opt_);
  local_sync_->set_tracer(ctx.tracer);
}

void DasoStrategy::before_forward(const StepInfo&) {
  // Nudge in-flight global syncs (MPI progresses non-blocking collectives inside its calls).
  for (auto& g : pending_)
    for (Request& r : g.sent.requests()) r.test();
}

void DasoStrategy::after_backward(const StepInfo&) {
  DPLAB_CHECK(local_sync_ != nullptr, "daso: after_backward before setup");
  local_sync_->finish();
}

void DasoStrategy::start_schedule(const StepInfo& step) {
  DPLAB_CHECK(pending_.empty(), "daso: {} global sync(s) still pending at the start of epoch {}",
              pending_.size(), step.epoch);
  sched_epoch_ = step.epoch;
  epoch_phase_ = daso_phase(step.epoch, step.total_epochs, cfg_);
  if (epoch_phase_ == DasoPhase::cycling) {
    epoch_B_ = cycle_.B();
    epoch_S_ = cycle_.S();
  } else {
    epoch_B_ = 1;  // blocking after every batch
    epoch_S_ = 0;
  }
  sched_ = daso_epoch_schedule(step.steps_per_epoch, epoch_phase_, epoch_B_, epoch_S_,
                               topo_->ranks_per_node(), cfg_.epoch_end_sync);
  next_ = 0;
  epoch_syncs_ = 0;
}

void DasoStrategy::after_step(const StepInfo& step) {
  DPLAB_CHECK(local_sync_ != nullptr, "daso: after_step before setup");
  total_epochs_ = step.total_epochs;
  if (step.epoch != sched_epoch_) start_schedule(step);
  const int64_t t = step.step_in_epoch;
  // 1. Stale receives due after this batch, oldest first (Eq. 1 + local update).
  while (!pending_.empty() && pending_.front().sync.merge_batch <= t) {
    merge(pending_.front());
    if (pending_.front().buf.defined()) free_bufs_.push_back(pending_.front().buf);
    pending_.pop_front();
  }
  // 2. Global syncs starting after this batch.
  while (next_ < sched_.size() && sched_[next_].send_batch <= t) {
    const DasoSync s = sched_[next_++];
    if (s.send_batch < t) continue;  // resumed in the middle of the epoch: already past
    ++epoch_syncs_;
    if (s.blocking())
      blocking_sync(s, epoch_phase_ == DasoPhase::cycling ? cfg_.global_wire : cfg_.blocking_wire);
    else
      post(s);
  }
}

void DasoStrategy::post(const DasoSync& s) {
  GlobalSend g;
  g.sync = s;
  if (member(s.group)) {
    // A separate send buffer: the live parameters keep training for S batches.
    if (!free_bufs_.empty()) {
      g.buf = free_bufs_.back();
      free_bufs_.pop_back();
    } else {
      g.buf = Tensor::empty({ctx_.arena->numel()}, DType::f32, ctx_.arena->device());
    }
    g.buf.copy_(ctx_.arena->params());
    // Σ_{i=1..P} x_t^i over the global group, in flight for the next S' batches.
    g.sent = meter().iallreduce(topo_->cross(), "daso global send", g.buf, ReduceOp::sum,
                                cfg_.global_wire);
    g.sent.wait_as("wait daso merge");
  }
  pending_.push_back(std::move(g));
}

void DasoStrategy::merge(GlobalSend& g) {
  if (member(g.sync.group)) {
    meter().complete(g.sent);  // the send belongs to the step that posted it, the wait to this one
    // Eq. 1: x_{t+S} = (2S·x_{t+S-1} + Σ_{i=1..P} x_t^i) / (2S + P), x this member's current
    // parameters (S' local steps past the send), the sum over the P members of the group.
    const double w = 2.0 * g.sync.S;
    const double d = w + static_cast<double>(topo_->cross().size());
    Tensor x = ctx_.arena->params();
    mul_(x, static_cast<float>(w / d));
    add_(x, g.buf, static_cast<float>(1.0 / d));
  }
  broadcast_from(g.sync.group);
}

void DasoStrategy::blocking_sync(const DasoSync& s, DType wire) {
  // S' = 0: the plain average over the group, in place (16-bit wire reduces in f32).
  if (member(s.group))
    meter().allreduce(topo_->cross(), "daso global sync", ctx_.arena->params(), ReduceOp::average,
                      wire);
  broadcast_from(s.group);
}

void DasoStrategy::broadcast_from(int group) {
  // Local update: the group member's parameters replace those of the other ranks of its node.
  if (topo_->node().size() == 1) return;
  meter().broadcast(topo_->node(), "broadcast", ctx_.arena->params(), group);
}

void DasoStrategy::end_epoch(int64_t epoch, double mean_train_loss) {
  // The plateau test sees the training loss averaged over all ranks, so every rank takes the
  // same B/S decision. The loss is a host scalar: it travels on the arena's device (the
  // communicators' device) and the average is read back on the host by item().
  Tensor l = Tensor::full({1}, mean_train_loss, DType::f32, ctx_.arena->device());
  Pending p = meter().iallreduce(world(), "loss average", l, ReduceOp::average);
  meter().complete_blocking(p, Use::host);
  last_loss_ = l.item();
  cycle_.end_epoch(epoch, total_epochs_, last_loss_);
}

void DasoStrategy::drain() {
  // Normally empty here (receives never cross an epoch); after a stop in the middle of an
  // epoch the pending receives are merged now.
  while (!pending_.empty()) {
    merge(pending_.front());
    if (pending_.front().buf.defined()) free_bufs_.push_back(pending_.front().buf);
    pending_.pop_front();
  }
  average_buffers();
}

CommStats DasoStrategy::take_stats() {
  CommStats s = local_sync_ ? local_sync_->take_stats() : CommStats{};
  s.add(DistributedStrategy::take_stats());
  return s;
}

namespace {

std::vector<int64_t> flat_syncs(const std::vector<DasoSync>& syncs) {
  std::vector<int64_t> flat;  // (send, merge, group, S) per sync
  for (const DasoSync& s : syncs)
    flat.insert(flat.end(), {s.send_batch, s.merge_batch, s.group, s.S});
  return flat;
}

std::vector<DasoSync> syncs_from_state(const StateDict& in, const std::string& key, int G) {
  const std::vector<int64_t> flat = in.get_ints(key);
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(flat.size() % 4 == 0,
              "{}: daso state '{}' has {} values, expected (send, merge, group, S) quadruples",
              where, key, flat.size());
  std::vector<DasoSync> out;
  for (size_t i = 0; i < flat.size(); i += 4) {
    DasoSync s;
    s.send_batch = flat[i];
    s.merge_batch = flat[i + 1];
    s.group = int(flat[i + 2]);
    s.S = int(flat[i + 3]);
    DPLAB_CHECK(s.send_batch >= 0 && flat[i + 3] >= 0 && flat[i + 3] <= INT32_MAX &&
                    s.merge_batch == s.send_batch + s.S && flat[i + 2] >= 0 && flat[i + 2] < G,
                "{}: daso state '{}' entry {}: (send {}, merge {}, group {}, S {}) is not a sync "
                "of {} ranks per node",
                where, key, i / 4, flat[i], flat[i + 1], flat[i + 2], flat[i + 3], G);
    out.push_back(s);
  }
  return out;
}

}  // namespace

void DasoStrategy::save_algorithm_state(StateDict& out) const {
  out.put_int("nodes", topo_->num_nodes());
  out.put_int("ranks_per_node", topo_->ranks_per_node());
  StateDict cyc;
  cycle_.save_state(cyc);
  out.merge("cycle.", cyc);
  out.put_int("schedule_epoch", sched_epoch_);
  out.put_ints("schedule", flat_syncs(sched_));
  out.put_int("schedule_next", int64_t(next_));
  out.put_int("total_epochs", total_epochs_);
  out.put_int("epoch_phase", int64_t(epoch_phase_));
  out.put_int("epoch_B", epoch_B_);
  out.put_int("epoch_S", epoch_S_);
  out.put_int("epoch_syncs", epoch_syncs_);
  out.put_double("world_loss", last_loss_);
  // Syncs sent and not yet merged (none after drain()): their sums are waited for here, not
  // merged, so a checkpoint taken without drain() leaves the trajectory as it was. The members
  // of a sync's group save its sum; the merge happens at its batch after the resume.
  std::vector<DasoSync> pending;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const GlobalSend& g = pending_[i];
    pending.push_back(g.sync);
    if (!member(g.sync.group)) continue;
    for (Request r : g.sent.requests()) r.wait();  // a handle on the same operation
    out.put_tensor("pending." + std::to_string(i) + ".sum", g.buf);
  }
  out.put_ints("pending", flat_syncs(pending));
  if (local_sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    local_sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void DasoStrategy::load_algorithm_state(const StateDict& in) {
  DPLAB_CHECK(local_sync_ != nullptr, "daso: load_state before setup");
  const int G = topo_->ranks_per_node();
  state_int(in, "daso", "nodes", topo_->num_nodes(), topo_->num_nodes());
  state_int(in, "daso", "ranks_per_node", G, G);
  const int64_t sched_epoch = state_int(in, "daso", "schedule_epoch", -1, INT64_MAX);
  std::vector<DasoSync> sched = syncs_from_state(in, "schedule", G);
  const std::vector<DasoSync> pending = syncs_from_state(in, "pending", G);
  const int64_t next = state_int(in, "daso", "schedule_next", 0, int64_t(sched.size()));
  const int64_t total = state_int(in, "daso", "total_epochs", 0, INT64_MAX);
  const int64_t phase = state_int(in, "daso", "epoch_phase", 0, 2);
  const int64_t eb = state_int(in, "daso", "epoch_B", 0, cfg_.B_max);
  const int64_t es = state_int(in, "daso", "epoch_S", 0, INT32_MAX);
  const int64_t syncs = state_int(in, "daso", "epoch_syncs", 0, int64_t(sched.size()));
  const double loss = in.get_double("world_loss");
  std::deque<GlobalSend> restored;
  for (size_t i = 0; i < pending.size(); ++i) {
    GlobalSend g;
    g.sync = pending[i];
    if (member(g.sync.group)) {
      // The group's sum, already received (nothing left to complete).
      g.buf = Tensor::empty({ctx_.arena->numel()}, DType::f32, ctx_.arena->device());
      restore_tensor(in, "daso", "pending." + std::to_string(i) + ".sum", g.buf);
    }
    restored.push_back(std::move(g));
  }
  cycle_.load_state(in.sub("cycle."));
  if (local_sync_) local_sync_->load_state(in.sub("sync."));
  pending_ = std::move(restored);
  sched_epoch_ = sched_epoch;
  sched_ = std::move(sched);
  next_ = size_t(next);
  total_epochs_ = total;
  epoch_phase_ = DasoPhase(phase);
  epoch_B_ = int(eb);
  epoch_S_ = int(es);
  epoch_syncs_ = syncs;
  last_loss_ = loss;
}

std::map<std::string, double> DasoStrategy::state() const {
  std::map<std::string, double> s = {
      {"B", epoch_B_},
      {"S", epoch_S_},
      {"phase", static_cast<double>(epoch_phase_)},
      {"global_syncs", static_cast<double>(epoch_syncs_)},
      {"next_B", cycle_.B()},
      {"next_S", cycle_.S()},
      {"plateaus", cycle_.plateaus()},
      {"world_loss", last_loss_},
      {"nodes", static_cast<double>(topo_->num_nodes())},
      {"ranks_per_node", static_cast<double>(topo_->ranks_per_node())}};
  if (local_sync_) local_sync_->add_compression_state(s);
  return s;
}

std::vector<std::string> DasoStrategy::plan_notes(const RunPlan& plan) const {
  std::vector<std::string> v;
  if (topo_->num_nodes() == 1)
    v.push_back(fmt::format(
        "warning: algo = daso on one node ({} ranks, {} per node): its node-local and global "
        "levels are the same ranks; set --ranks-per-node N for virtual nodes",
        world_size(), topo_->ranks_per_node()));
  if (cfg_.phases) {
    const int64_t spe = std::max<int64_t>(1, plan.steps_per_epoch);
    const int64_t reached = std::min(plan.epochs, (plan.steps + spe - 1) / spe);
    int64_t first = -1;
    for (int64_t e = 0; e < reached && first < 0; ++e)
      if (daso_phase(e, plan.epochs, cfg_) == DasoPhase::cycling) first = e;
    if (first < 0)
      v.push_back(fmt::format(
          "warning: DASO's cycling phase never runs: daso.warmup_epochs = {} and "
          "daso.cooldown_epochs = {} cover all {} epoch{} the run reaches (of epochs = {}): "
          "every batch syncs blocking, as in warm-up; lower them or set daso.phases = false",
          cfg_.warmup_epochs, cfg_.cooldown_epochs, reached, reached == 1 ? "" : "s", plan.epochs));
    else
      v.push_back(fmt::format(
          "DASO phases: warm-up in epochs 1-{} (daso.warmup_epochs), cycling from epoch {}, "
          "cool-down in the last {} of epochs = {} (daso.cooldown_epochs)",
          cfg_.warmup_epochs, first + 1, cfg_.cooldown_epochs, plan.epochs));
  }
  for (std::string& n : compression_notes(local_opt_.compress, plan.steps)) v.push_back(n);
  return v;
}

std::vector<std::string> DasoStrategy::planned_from_epochs() const {
  if (!cfg_.phases || cfg_.cooldown_epochs == 0) return {};
  return {fmt::format("DASO's cool-down (daso.cooldown_epochs = {}: the last {} epochs)",
                      cfg_.cooldown_epochs, cfg_.cooldown_epochs)};
}

std::unique_ptr<Strategy> make_daso_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<DasoStrategy>(std::move(topo), opt);
}

ReshardPolicy daso_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the replicas' average (it replaces the global syncs in flight, dropped); the phase, B, "
      "S and plateau detector (global) rank 0's; the epoch's sync schedule re-laid for the new "
      "nodes x ranks per node; the optimizer's state averaged");
  p.rules.algo = {{"nodes", Combine::fresh},          {"ranks_per_node", Combine::fresh},
                  {"schedule_epoch", Combine::fresh}, {"schedule", Combine::fresh},
                  {"schedule_next", Combine::fresh},  {"epoch_syncs", Combine::fresh},
                  {"pending*", Combine::fresh},       compression_residuals_rule()};
  return p;
}

}  // namespace dplab
