#include "dplab/comm/algorithms/crossover.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/backend.h"
#include "dplab/core/error.h"
#include "dplab/core/run_options.h"
#include "dplab/core/usage_error.h"

namespace dplab {

namespace {

constexpr int kTagBase = 0x4300;  // + segment index; distinct from other algorithms' tags
// Topology draws use their own Philox key so they never correlate with data or weight draws.
constexpr uint64_t kTopologyKey = 0xC2055EED0F0F0F0Full;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool has_prefix(const std::string& name, const std::string& prefix) {
  return name == prefix ||
         (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
          name[prefix.size()] == '.');
}

// The group key of every tensor (arena order) for the named schemes.
std::vector<std::string> keys_for(const std::vector<ArenaSegment>& segs, const std::string& spec) {
  std::vector<std::string> keys;
  keys.reserve(segs.size());
  if (spec == "model") {
    keys.assign(segs.size(), "model");
    return keys;
  }
  if (spec == "tensors") {
    for (auto& s : segs) keys.push_back(s.name);
    return keys;
  }
  if (spec == "layers" || spec == "blocks") {
    for (auto& s : segs) {
      const auto parts = split(s.name, '.');
      // A residual block: "<stage>.<index>.*" (torchvision's layer1.0.conv1.weight).
      if (spec == "blocks" && parts.size() >= 3 && is_number(parts[1]))
        keys.push_back(parts[0] + "." + parts[1]);
      else
        keys.push_back(parts[0]);
    }
    if (spec == "blocks") {
      // Fold the stem (top-level modules registered before the first block) into the first
      // block, as the paper's "blocks and FC layer" cut. Registration order is the reverse of
      // the arena (ready) order.
      int first_block = -1;  // in registration order = highest arena index that is a block
      for (int i = static_cast<int>(segs.size()) - 1; i >= 0; --i)
        if (keys[size_t(i)].find('.') != std::string::npos) {
          first_block = i;
          break;
        }
      if (first_block >= 0)
        for (size_t i = size_t(first_block) + 1; i < segs.size(); ++i)
          keys[i] = keys[size_t(first_block)];
    }
    return keys;
  }
  // Explicit groups of prefixes.
  const auto groups = split(spec, '|');
  DPLAB_CHECK_OPTION(
      !spec.empty(),
      "option crossover.segments is empty (expected blocks, layers, tensors, model or "
      "'|'-separated groups of name prefixes)");
  for (auto& s : segs) {
    int match = -1;
    for (size_t g = 0; g < groups.size(); ++g)
      for (auto& p : split(groups[g], ','))
        if (!p.empty() && has_prefix(s.name, p)) {
          DPLAB_CHECK_OPTION(
              match == -1 || match == int(g),
              "option crossover.segments = '{}': parameter {} matches groups {} and {}", spec,
              s.name, match, g);
          match = int(g);
        }
    DPLAB_CHECK_OPTION(match >= 0,
                       "option crossover.segments = '{}': parameter {} matches no group (expected "
                       "blocks, layers, tensors, model or '|'-separated groups of name prefixes)",
                       spec, s.name);
    keys.push_back(groups[size_t(match)]);
  }
  return keys;
}

}  // namespace

std::vector<GossipSegment> plan_gossip_segments(const ParamArena& arena, const std::string& spec) {
  const auto& segs = arena.segments();
  DPLAB_CHECK(!segs.empty(), "crossover: the parameter arena is empty");
  const auto keys = keys_for(segs, spec);
  std::vector<GossipSegment> out;
  std::set<std::string> closed;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!out.empty() && out.back().name == keys[i]) {
      out.back().end = segs[i].offset + segs[i].numel;
      out.back().last_tensor = int(i);
      continue;
    }
    DPLAB_CHECK_OPTION(!closed.count(keys[i]),
                       "option crossover.segments = '{}': segment '{}' is not contiguous in the "
                       "parameter arena (tensor {} is separated from the rest of its group)",
                       spec, keys[i], segs[i].name);
    if (!out.empty()) closed.insert(out.back().name);
    GossipSegment g;
    g.name = keys[i];
    // A segment starts right after the previous one so alignment padding travels too and the
    // segments tile the whole arena.
    g.begin = out.empty() ? 0 : out.back().end;
    g.end = segs[i].offset + segs[i].numel;
    g.first_tensor = g.last_tensor = int(i);
    out.push_back(g);
  }
  out.back().end = arena.numel();
  return out;
}

CrossoverOptions CrossoverOptions::from_options(const Options& opt) {
  const OptionTable& t = crossover_option_table();
  CrossoverOptions o;
  o.segments = t.get_string(opt, "crossover.segments");
  o.sampler =
      parse_derangement_sampler(t.get_string(opt, "crossover.sampler"), "crossover.sampler");
  o.interval = t.get_int(opt, "crossover.interval");
  o.hierarchical = t.get_bool(opt, "crossover.hierarchical");
  // Declared "(seed)": the run's seed.
  o.seed = static_cast<uint64_t>(
      t.get_int(opt, "crossover.seed", run_option_table().get_int(opt, "seed")));
  o.check_maps = t.get_bool(opt, "crossover.check_maps");
  // "crossover.hierarchical" is the group mode; GradSync's keys live under "crossover.sync."
  // so they cannot clash with it.
  o.sync = GradSyncOptions::from_options(opt, "crossover.sync.");
  DPLAB_CHECK_OPTION(
      !o.sync.hierarchical,
      "option crossover.sync.hierarchical: the group gradient allreduce runs inside one "
      "node and has no hierarchy; use crossover.hierarchical for Crossover's group mode");
  // Without the group mode there is no gradient allreduce to compress: refuse rather than
  // ignore the setting.
  DPLAB_CHECK_OPTION(
      o.hierarchical || !o.sync.compress.enabled(),
      "option crossover.sync.compress = {}: gradient compression applies to the group gradient "
      "allreduce of crossover.hierarchical = true; flat Crossover exchanges parameter segments "
      "and averages no gradients",
      o.sync.compress.kind);
  return o;
}

CrossoverStrategy::CrossoverStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)), opt_(CrossoverOptions::from_options(opt)) {}

Communicator* CrossoverStrategy::gossip_comm() const {
  if (!opt_.hierarchical) return &topo_->world();
  return topo_->local_rank() == 0 ? &topo_->cross() : nullptr;
}

std::vector<int> CrossoverStrategy::gossip_group() const {
  if (!opt_.hierarchical) return live_ranks();
  std::vector<int> all(size_t(topo_->cross().size()));
  for (size_t j = 0; j < all.size(); ++j) all[j] = int(j);
  return all;
}

void CrossoverStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // common rule: every rank starts from rank 0's parameters
  segments_ = plan_gossip_segments(*ctx.arena, opt_.segments);
  recv_ = Tensor::zeros({ctx.arena->numel()}, DType::f32, ctx.arena->device());
  if (opt_.hierarchical) {
    GradSyncOptions so = opt_.sync;
    so.hierarchical = false;
    sync_ = std::make_unique<GradSync>(*ctx.arena, topo_->node_ptr(), so);
    sync_->set_tracer(ctx.tracer);
  }
}

StepPlan CrossoverStrategy::plan(const StepInfo& step) {
  // Intervals are counted inside the epoch and the last batch of an epoch always closes one, so
  // no accumulated gradient crosses an evaluation.
  StepPlan p;
  p.zero_grad = micro_ == 0;
  stepping_ = micro_ + 1 >= opt_.interval || step.last_in_epoch() || step.steps_per_epoch == 0;
  p.optimizer_step = stepping_;
  if (sync_) sync_->set_no_sync(!stepping_);  // only the interval's last backward communicates
  return p;
}

void CrossoverStrategy::after_backward(const StepInfo&) {
  ++micro_;
  if (!stepping_) return;
  if (sync_) sync_->finish();  // group average of the accumulated gradient
  if (micro_ > 1) {
    // Mean over the interval's micro-batches: the gradient of the emulated large batch.
    const float inv = 1.0f / static_cast<float>(micro_);
    Tensor g = ctx_.arena->grads();
    backend_for(g.device()).ew.unary(UnaryOp::mul_scalar, inv, g, g);
  }
}

void CrossoverStrategy::after_step(const StepInfo& step) {
  if (!stepping_) return;
  micro_ = 0;
  stepping_ = false;
  // Step first (the loop just did), then gossip: "parameter averaging is processed after the
  // gradient is applied".
  gossip(step.global_step);
}

std::vector<std::vector<int>> CrossoverStrategy::draw_maps(int64_t round, int n) {
  // One stream per round (stateless in the round, so a resumed run draws the same maps); the S
  // segments draw one after another from it, restarts included, identically on every rank.
  PhiloxStream rng(opt_.seed ^ kTopologyKey, static_cast<uint64_t>(round));
  std::vector<std::vector<int>> maps;
  maps.reserve(segments_.size());
  for (size_t s = 0; s < segments_.size(); ++s) {
    int restarts = 0;
    maps.push_back(draw_derangement(opt_.sampler, rng, n, &restarts));
    restarts_ += restarts;
  }
  return maps;
}

void CrossoverStrategy::gossip(int64_t round) {
  DPLAB_CHECK(ctx_.arena != nullptr, "crossover: gossip before setup");
  Communicator* comm = gossip_comm();
  const Tensor& params = ctx_.arena->params();
  // The gossiping ranks of comm (in flat mode while ranks are down, the live ones:
  // docs/virtual_cluster.md, "Failures"), the maps naming them by their index there.
  const std::vector<int> group = gossip_group();
  const auto here = std::find(group.begin(), group.end(), comm != nullptr ? comm->rank() : -1);
  if (comm != nullptr && group.size() >= 2 && here != group.end()) {
    const int n = int(group.size()), me = int(here - group.begin());
    const auto maps = draw_maps(round, n);
    if (opt_.check_maps) {
      // Debug: every rank must have drawn the same maps (the shared stream is the whole
      // protocol; a disagreement would deadlock or mix wrong segments). The maps are host
      // values: they travel on the arena's device (the communicator's) and come back to the
      // host explicitly.
      std::vector<int32_t> flat;
      for (auto& m : maps) flat.insert(flat.end(), m.begin(), m.end());
      Tensor mine_host = Tensor::empty({int64_t(flat.size())}, DType::i32);
      std::copy(flat.begin(), flat.end(), mine_host.data<int32_t>());
      const Tensor mine = mine_host.to(params.device());
      Tensor all = Tensor::empty({int64_t(flat.size()) * n}, DType::i32, params.device());
      Pending p = meter().iallgather(*comm, "peer map check", mine, all);
      meter().complete_blocking(p, Use::host);
      const Tensor all_host = all.to(Device::cpu());
      const int32_t* a = all_host.data<int32_t>();
      for (int r = 0; r < n; ++r)
        for (size_t k = 0; k < flat.size(); ++k)
          DPLAB_CHECK(a[size_t(r) * flat.size() + k] == flat[k],
                      "crossover: rank {} drew a different peer map than rank {} in round {}", r,
                      me, round);
    }
    // Algorithm 1, lines 1-10: post every segment's receive and send at once.
    Pending exchange;
    std::set<int> peers;
    for (size_t s = 0; s < segments_.size(); ++s) {
      const auto& seg = segments_[s];
      const int src = group[size_t(maps[s][size_t(me)])];  // receive_from = destinations[me]
      int dst = -1;                                        // send_to = destinations.index(me)
      for (int j = 0; j < n; ++j)
        if (maps[s][size_t(j)] == me) dst = group[size_t(j)];
      const int tag = kTagBase + static_cast<int>(s);
      exchange.join(
          meter().irecv(*comm, "gossip exchange", recv_.flat_range(seg.begin, seg.end), src, tag));
      exchange.join(
          meter().isend(*comm, "gossip exchange", params.flat_range(seg.begin, seg.end), dst, tag));
      peers.insert(dst);
    }
    // Lines 11-13: wait for all (gossip is synchronous; the segments overlap each other, not
    // compute, so the whole wait is exposed).
    meter().complete(exchange);
    // Lines 14-18: x_s <- (x_s + received_s) / 2. (a + b) * 0.5 is symmetric in a and b, so a
    // 2-cycle leaves both ranks bitwise equal. Backend kernels on each segment's views: the
    // same arithmetic on a CPU or a CUDA arena.
    const ElementwiseKernels& ew = backend_for(params.device()).ew;
    for (auto& seg : segments_) {
      Tensor x = params.flat_range(seg.begin, seg.end);
      const Tensor r = recv_.flat_range(seg.begin, seg.end);
      ew.binary(BinaryOp::add, x, r, x);
      ew.unary(UnaryOp::mul_scalar, 0.5f, x, x);
    }
    peer_sum_ += static_cast<int64_t>(peers.size());
  }
  if (opt_.hierarchical && topo_->node().size() > 1) {
    // The leader's gossiped parameters propagate to its group.
    meter().broadcast(topo_->node(), "broadcast", params, 0);
  }
  ++rounds_;
}

void CrossoverStrategy::drain() {
  // Gossip is synchronous and intervals close at epoch ends: nothing is in flight here. The
  // evaluated model is rank 0's own, with its own BatchNorm statistics (notes §5.5).
}

bool CrossoverStrategy::consensus_eval(const std::function<void()>& evaluate) {
  DPLAB_CHECK(ctx_.arena != nullptr, "crossover: consensus_eval before setup");
  if (world_size() < 2) return false;
  evaluate_average(evaluate, true);  // with the consensus model's BatchNorm statistics
  return true;
}

CommStats CrossoverStrategy::take_stats() {
  CommStats s = DistributedStrategy::take_stats();
  if (sync_) s.add(sync_->take_stats());
  return s;
}

void CrossoverStrategy::save_algorithm_state(StateDict& out) const {
  DPLAB_CHECK(ctx_.arena != nullptr, "crossover: save_state before setup");
  out.put_int("micro", micro_);
  if (micro_ > 0) out.put_tensor("grad", ctx_.arena->grads());
  out.put_int("rounds", rounds_);
  out.put_int("sampler_restarts", restarts_);
  out.put_int("peer_sum", peer_sum_);
  if (sync_) {  // gradient compression state (comm/grad_compress.h), if any
    StateDict sync_state;
    sync_->save_state(sync_state);
    out.merge("sync.", sync_state);
  }
}

void CrossoverStrategy::load_algorithm_state(const StateDict& in) {
  DPLAB_CHECK(ctx_.arena != nullptr, "crossover: load_state before setup");
  const int64_t micro = state_int(in, "crossover", "micro", 0, opt_.interval - 1);
  const int64_t rounds = state_int(in, "crossover", "rounds", 0, INT64_MAX);
  const int64_t restarts = state_int(in, "crossover", "sampler_restarts", 0, INT64_MAX);
  const int64_t peers = state_int(in, "crossover", "peer_sum", 0, INT64_MAX);
  if (micro > 0) restore_tensor(in, "crossover", "grad", ctx_.arena->grads());
  if (sync_) sync_->load_state(in.sub("sync."));
  micro_ = micro;
  stepping_ = false;
  rounds_ = rounds;
  restarts_ = restarts;
  peer_sum_ = peers;
}

std::map<std::string, double> CrossoverStrategy::state() const {
  Communicator* comm = gossip_comm();
  std::map<std::string, double> s = {
      {"segments", static_cast<double>(segments_.size())},
      {"interval", static_cast<double>(opt_.interval)},
      {"hierarchical", opt_.hierarchical ? 1.0 : 0.0},
      {"gossip_ranks", comm ? static_cast<double>(comm->size()) : 0.0},
      {"rounds", static_cast<double>(rounds_)},
      {"sampler_restarts", static_cast<double>(restarts_)},
      {"mean_distinct_peers",
       rounds_ ? static_cast<double>(peer_sum_) / static_cast<double>(rounds_) : 0.0}};
  if (sync_) sync_->add_compression_state(s);
  return s;
}

std::vector<std::string> CrossoverStrategy::plan_notes(const RunPlan& plan) const {
  if (!opt_.hierarchical) return {};
  return compression_notes(opt_.sync.compress, plan.steps);
}

std::unique_ptr<Strategy> make_crossover_strategy(std::shared_ptr<Topology> topo,
                                                  const Options& opt) {
  return std::make_unique<CrossoverStrategy>(std::move(topo), opt);
}

ReshardPolicy crossover_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the replicas' average (gossip preserves it); the gradient accumulated in the interval "
      "and the optimizer's state averaged; the derangements drawn for the new world");
  p.rules.algo = {
      {"grad", Combine::mean}, {"peer_sum", Combine::rank0}, compression_residuals_rule()};
  return p;
}

}  // namespace dplab
