#include "dplab/comm/algorithms/streaming_diloco.h"

#include <algorithm>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/crossover.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/usage_error.h"

namespace dplab {

// The keys' own ranges are their rules too (streaming_diloco_options.cpp); checked again here
// for a schedule built in code.
void StreamingSchedule::check() const {
  DPLAB_CHECK_OPTION(H >= 1, "option streaming_diloco.H: expected an integer >= 1, got {}", H);
  DPLAB_CHECK_OPTION(
      fragments >= 1 && fragments <= H,
      "option streaming_diloco.fragments: expected an integer in [1, H = {}], got {}", H,
      fragments);
  DPLAB_CHECK_OPTION(delay >= 0 && delay < H / fragments,
                     "option streaming_diloco.fragment_sync_delay: expected an integer in [0, "
                     "H / fragments = {}) (an exchange must complete before the next fragment "
                     "sends), got {}",
                     H / fragments, delay);
}

int64_t StreamingSchedule::sends_after(int64_t s) const {
  if (s < 1) return -1;
  const int64_t r = s % H;
  // o_p = ((p + 1) H) / P is increasing in p and distinct (P <= H); o_{P−1} = H ≡ 0.
  for (int64_t p = 0; p < fragments; ++p)
    if (offset(p) % H == r && s >= offset(p)) return p;
  return -1;
}

std::vector<std::pair<int64_t, int64_t>> arena_fragments(const ParamArena& arena,
                                                         int64_t fragments) {
  const auto& segs = arena.segments();
  DPLAB_CHECK_OPTION(fragments >= 1 && fragments <= int64_t(segs.size()),
                     "option streaming_diloco.fragments: expected at most {} (the model's "
                     "parameter tensors: fragments are cut at tensor boundaries), got {}",
                     segs.size(), fragments);
  const int64_t total = arena.numel();
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t begin = 0;
  size_t i = 0;
  for (int64_t p = 0; p < fragments; ++p) {
    const int64_t target = ((p + 1) * total) / fragments;
    const size_t later = size_t(fragments - 1 - p);  // tensors the later fragments still need
    int64_t end = begin;
    do {
      end = segs[i].offset + segs[i].numel;
      ++i;
    } while (i < segs.size() - later && end < target);
    if (p == fragments - 1) end = total;  // the last fragment takes the rest
    out.push_back({begin, end});
    begin = end;
  }
  return out;
}

int64_t fragment_numel(const Fragment& f) {
  int64_t n = 0;
  for (const auto& [b, e] : f) n += e - b;
  return n;
}

std::vector<Fragment> plan_fragments(const ParamArena& arena, int64_t fragments,
                                     const std::string& pattern) {
  std::vector<Fragment> out;
  if (pattern == "contiguous") {
    for (const auto& r : arena_fragments(arena, fragments)) out.push_back({r});
    return out;
  }
  DPLAB_CHECK_OPTION(pattern == "strided",
                     "option streaming_diloco.fragment_pattern: expected contiguous or strided, "
                     "got '{}'",
                     pattern);
  const auto blocks = plan_gossip_segments(arena, "blocks");
  DPLAB_CHECK_OPTION(fragments >= 1 && fragments <= int64_t(blocks.size()),
                     "option streaming_diloco.fragments: expected at most {} (the model's blocks: "
                     "streaming_diloco.fragment_pattern = strided deals whole blocks), got {}",
                     blocks.size(), fragments);
  out.resize(size_t(fragments));
  for (size_t b = 0; b < blocks.size(); ++b) {
    Fragment& f = out[b % size_t(fragments)];
    if (!f.empty() && f.back().second == blocks[b].begin)
      f.back().second = blocks[b].end;  // P = 1: one range
    else
      f.push_back({blocks[b].begin, blocks[b].end});
  }
  return out;
}

StreamingDiLoCoOptions StreamingDiLoCoOptions::from_options(const Options& opt) {
  const OptionTable& t = streaming_diloco_option_table();
  StreamingDiLoCoOptions o;
  o.schedule.H = t.get_int(opt, "streaming_diloco.H");
  o.schedule.fragments = t.get_int(opt, "streaming_diloco.fragments");
  o.schedule.delay = t.get_int(opt, "streaming_diloco.fragment_sync_delay");
  o.schedule.check();
  o.fragment_pattern = t.get_string(opt, "streaming_diloco.fragment_pattern");
  o.alpha = t.get_double(opt, "streaming_diloco.fragment_update_alpha");
  const std::string wire = t.get_string(opt, "streaming_diloco.wire");
  o.wire = parse_dtype(wire);
  const std::string quantize = t.get_string(opt, "streaming_diloco.quantize");
  if (quantize != "none") o.quantize = parse_quant_format(quantize, "streaming_diloco.quantize");
  DPLAB_CHECK_OPTION(!o.quantize || o.wire == DType::f32,
                     "option streaming_diloco.quantize: expected none with streaming_diloco.wire "
                     "= {} (the quantised exchange replaces the allreduce whose wire type wire "
                     "sets: leave wire at f32 or set quantize = none), got '{}'",
                     wire, quantize);
  o.quantize_block = t.get_int(opt, "streaming_diloco.quantize_block");
  o.outer_lr = t.get_double(opt, "streaming_diloco.outer_lr");
  o.outer_momentum = t.get_double(opt, "streaming_diloco.outer_momentum");
  o.outer_nesterov = t.get_bool(opt, "streaming_diloco.outer_nesterov");
  o.round_spans_epochs = t.get_bool(opt, "streaming_diloco.round_spans_epochs");
  return o;
}

namespace {
// No round ends by count: the staggered schedule syncs the fragments; a round is the stretch
// between two full syncs (epoch ends unless rounds span epochs, and the end of training).
PeriodicSyncConfig streaming_rounds(const StreamingDiLoCoOptions& o) {
  return {.period = 0,
          .round_spans_epochs = o.round_spans_epochs,
          .period_key = "",  // H is checked with the schedule (load_sync_state)
          .steps_key = "inner_steps",
          .rounds_key = "rounds",
          .period_option = ""};
}
}  // namespace

StreamingDiLoCoStrategy::StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : StreamingDiLoCoStrategy(std::move(topo), StreamingDiLoCoOptions::from_options(opt)) {}

StreamingDiLoCoStrategy::StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo,
                                                 const StreamingDiLoCoOptions& o)
    : PeriodicSyncStrategy(std::move(topo), streaming_rounds(o)), opt_(o) {}

void StreamingDiLoCoStrategy::setup(TrainContext& ctx) {
  PeriodicSyncStrategy::setup(ctx);  // θ_g(0): rank 0's model on every rank
  frags_ = plan_fragments(*ctx.arena, opt_.schedule.fragments, opt_.fragment_pattern);
  if (opt_.quantize) {
    DPLAB_CHECK_OPTION(
        ctx.arena->device().is_cpu(),
        "option streaming_diloco.quantize = {}: outer gradients are quantised on the "
        "host, but the parameters are on {}; use quantize = none (wire = bf16 sends 16 "
        "bits on a device)",
        quant_format_name(*opt_.quantize), ctx.arena->device().str());
    quantizer_.emplace(*opt_.quantize, opt_.quantize_block, "streaming_diloco.quantize_block");
  }
  theta_ = ctx.arena->params().clone();
  int64_t largest = 0;
  for (const Fragment& f : frags_) largest = std::max(largest, fragment_numel(f));
  delta_ = Tensor::zeros({largest}, DType::f32, theta_.device());
  if (opt_.outer_momentum > 0)
    momentum_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  outer_steps_.assign(frags_.size(), 0);
}

std::vector<Tensor> StreamingDiLoCoStrategy::pieces(const Tensor& t, int64_t p) const {
  std::vector<Tensor> out;
  for (const auto& [b, e] : frags_[size_t(p)]) out.push_back(t.flat_range(b, e));
  return out;
}

void StreamingDiLoCoStrategy::send(int64_t p) {
  NoGradGuard no_grad;
  // δ_p = θ_g[p] − θ_i[p](s), packed range after range, averaged over the replicas while
  // training goes on.
  Tensor d = delta(p);
  auto theta = pieces(theta_, p), local = pieces(ctx_.arena->params(), p);
  int64_t at = 0;
  for (size_t k = 0; k < theta.size(); ++k) {
    Tensor dk = d.flat_range(at, at + theta[k].numel());
    dk.copy_(theta[k]);
    add_(dk, local[k], -1.f);
    at += theta[k].numel();
  }
  // Averaged over the live replicas while some are down (docs/virtual_cluster.md, "Failures"),
  // on either wire: a block's scale is its max |x| / V, so quantising w δ gives w times δ's
  // codes (to the f32 rounding of the scale; a down rank's zeros give zeros), and the quantised
  // mean (1/W) Σ_r Q(w_r δ_r) is the live replicas' (1/L) Σ_live Q(δ_r).
  weigh_for_live_average(d);
  pending_ = p;
  pending_sent_at_ = steps_in_round();
  Communicator& comm = world();
  if (comm.size() == 1) return;
  if (quantizer_)
    post_shards(d);
  else
    exchange_ =
        meter().iallreduce(comm, "outer gradient fragment", d, ReduceOp::average, opt_.wire);
}

namespace {
constexpr int kShardTag = 0x5344;  // the quantised exchange's messages; distinct from others'

// Shard r of the n values x (length L, the last ones shorter or empty), padded with zeros.
std::vector<float> padded_shard(const float* x, int64_t n, int64_t L, int r) {
  std::vector<float> s(size_t(L), 0.f);
  const int64_t lo = std::min(n, int64_t(r) * L), hi = std::min(n, lo + L);
  std::copy(x + lo, x + hi, s.begin());
  return s;
}
}  // namespace

int64_t StreamingDiLoCoStrategy::shard_len(int64_t n) const {
  const int64_t W = world().size();
  return (n + W - 1) / W;
}

void StreamingDiLoCoStrategy::post_shards(const Tensor& d) const {
  // a. Every shard of this rank's δ_p quantised, shard r sent to rank r; this rank's own shard
  // stays here (its quantised copy, as every other rank's).
  Communicator& comm = world();
  const int W = comm.size(), me = comm.rank();
  const int64_t n = d.numel(), L = shard_len(n), S = quantizer_->packed_bytes(L);
  q_send_ = Tensor::empty({S * W}, DType::u8);
  q_recv_ = Tensor::empty({S * W}, DType::u8);
  for (int r = 0; r < W; ++r)
    quantizer_->encode(padded_shard(d.data<float>(), n, L, r).data(), L,
                       q_send_.data<uint8_t>() + int64_t(r) * S);
  q_recv_.flat_range(me * S, (me + 1) * S).copy_(q_send_.flat_range(me * S, (me + 1) * S));
  Pending all;
  for (int r = 0; r < W; ++r) {
    if (r == me) continue;
    Tensor in = q_recv_.flat_range(r * S, (r + 1) * S),
           out = q_send_.flat_range(r * S, (r + 1) * S);
    Pending pr = meter().irecv(comm, "outer gradient shards", in, r, kShardTag);
    Pending ps = meter().isend(comm, "outer gradient shards", out, r, kShardTag);
    if (all.empty())
      all = std::move(pr);
    else
      all.join(std::move(pr));
    all.join(std::move(ps));
  }
  exchange_ = std::move(all);
  phase_ = Phase::shards;
}

void StreamingDiLoCoStrategy::reduce_shards() const {
  // b. This rank's shard: the W quantised copies decoded and added in f32 in rank order, divided
  // by W, quantised again; c. the mean shards allgathered (completed by wait_exchange).
  meter().complete(exchange_, Use::host);
  Communicator& comm = world();
  const int W = comm.size();
  const int64_t L = shard_len(delta(pending_).numel()), S = quantizer_->packed_bytes(L);
  std::vector<float> mean(size_t(L), 0.f);
  for (int r = 0; r < W; ++r)
    quantizer_->decode_add(q_recv_.data<uint8_t>() + int64_t(r) * S, L, mean.data());
  for (float& v : mean) v /= float(W);
  q_mean_ = Tensor::empty({S}, DType::u8);
  q_all_ = Tensor::empty({S * W}, DType::u8);
  quantizer_->encode(mean.data(), L, q_mean_.data<uint8_t>());
  exchange_ = meter().iallgather(comm, "outer gradient mean shards", q_mean_, q_all_);
  phase_ = Phase::means;
}

void StreamingDiLoCoStrategy::decode_means() const {
  // Δ_p: every rank's quantised mean shard decoded, in place of δ_p.
  Tensor d = delta(pending_);
  const int W = world().size();
  const int64_t n = d.numel(), L = shard_len(n), S = quantizer_->packed_bytes(L);
  float* out = d.data<float>();
  for (int r = 0; r < W; ++r) {
    std::vector<float> shard(size_t(L), 0.f);
    quantizer_->decode_add(q_all_.data<uint8_t>() + int64_t(r) * S, L, shard.data());
    const int64_t lo = std::min(n, int64_t(r) * L), hi = std::min(n, lo + L);
    std::copy(shard.begin(), shard.begin() + (hi - lo), out + lo);
  }
}

void StreamingDiLoCoStrategy::wait_exchange() const {
  if (phase_ == Phase::shards) reduce_shards();
  if (phase_ == Phase::means) {
    // The host decodes a quantised exchange: it reads the result.
    meter().complete(exchange_, Use::host);
    decode_means();
    phase_ = Phase::none;
    return;
  }
  meter().complete(exchange_, Use::compute);
}

void StreamingDiLoCoStrategy::apply(int64_t p, double alpha) {
  NoGradGuard no_grad;
  DPLAB_CHECK(pending_ == p, "streaming_diloco: fragment {} is due, but fragment {} is in flight",
              p, pending_);
  wait_exchange();
  // θ_g[p] ← OuterOpt(θ_g[p], Δ_p): DiLoCo's outer SGD on the fragment's ranges (element-wise,
  // so range by range is the fragment's step).
  auto theta = pieces(theta_, p), local = pieces(ctx_.arena->params(), p);
  auto buf = momentum_.defined() ? pieces(momentum_, p) : std::vector<Tensor>{};
  SgdStepArgs a;
  a.lr = static_cast<float>(opt_.outer_lr);
  a.momentum = static_cast<float>(opt_.outer_momentum);
  a.nesterov = opt_.outer_nesterov && opt_.outer_momentum > 0;
  a.first_step = outer_steps_[size_t(p)] == 0;
  int64_t at = 0;
  for (size_t k = 0; k < theta.size(); ++k) {
    Tensor delta_k = delta(p).flat_range(at, at + theta[k].numel());
    at += theta[k].numel();
    Tensor none;
    backend_for(theta[k].device())
        .optim.sgd_step(theta[k], delta_k, buf.empty() ? none : buf[k], a);
    // θ_i[p] ← θ_g[p] + α (θ_i[p] − θ_g[p]), reusing Δ's range as scratch.
    if (alpha == 0) {
      local[k].copy_(theta[k]);
    } else {
      delta_k.copy_(local[k]);
      add_(delta_k, theta[k], -1.f);
      local[k].copy_(theta[k]);
      add_(local[k], delta_k, static_cast<float>(alpha));
    }
  }
  ++outer_steps_[size_t(p)];
  pending_ = -1;
}

void StreamingDiLoCoStrategy::inner_step(const StepInfo&, bool) {
  // Helps a non-blocking MPI exchange progress while the inner steps go on.
  for (Request& r : exchange_.requests()) r.test();
  const int64_t s = steps_in_round();
  // The quantised exchange's second half starts at the first inner step after the send, on
  // every rank at the same step (a collective: the ranks must post it in the same order).
  if (phase_ == Phase::shards && s > pending_sent_at_) reduce_shards();
  const int64_t due = opt_.schedule.applies_after(s);
  if (due >= 0 && pending_ == due) apply(due, opt_.alpha);
  const int64_t sends = opt_.schedule.sends_after(s);
  if (sends >= 0) {
    send(sends);
    if (opt_.schedule.delay == 0) apply(sends, opt_.alpha);
  }
}

void StreamingDiLoCoStrategy::sync(RoundEnd) {
  if (pending_ >= 0) apply(pending_, opt_.alpha);
  // One last outer step of every fragment, blocking, taking the global fragment (α = 0): the
  // model is θ_g, the same on every rank.
  for (int64_t p = 0; p < int64_t(frags_.size()); ++p) {
    send(p);
    apply(p, 0.0);
  }
}

void StreamingDiLoCoStrategy::drain() {
  if (pending_ >= 0) wait_exchange();  // applied at its step as scheduled
  average_buffers();
}

std::map<std::string, double> StreamingDiLoCoStrategy::state() const {
  int64_t total = 0;
  for (int64_t n : outer_steps_) total += n;
  return {{"H", double(opt_.schedule.H)},
          {"fragments", double(frags_.size())},
          {"outer_steps", double(total)}};
}

void StreamingDiLoCoStrategy::save_sync_state(StateDict& out) const {
  out.put_int("H", opt_.schedule.H);
  out.put_int("fragments", opt_.schedule.fragments);
  out.put_int("fragment_sync_delay", opt_.schedule.delay);
  out.put_int("fragment_strided", opt_.fragment_pattern == "strided" ? 1 : 0);
  out.put_ints("outer_steps", outer_steps_);
  out.put_tensor("theta_global", theta_);
  if (momentum_.defined()) out.put_tensor("outer_momentum", momentum_);
  out.put_int("pending_fragment", pending_);
  if (pending_ >= 0) {
    wait_exchange();  // the averaged Δ, applied after the resume at its step
    out.put_int("pending_sent_at", pending_sent_at_);
    out.put_tensor("pending_delta", delta(pending_));
  }
}

void StreamingDiLoCoStrategy::load_sync_state(const StateDict& in, const RoundPosition& at) {
  const auto& sc = opt_.schedule;
  state_int(in, name(), "H", sc.H, sc.H);
  state_int(in, name(), "fragments", sc.fragments, sc.fragments);
  state_int(in, name(), "fragment_sync_delay", sc.delay, sc.delay);
  // Checkpoints from before fragment_pattern existed hold contiguous fragments.
  const bool saved_strided = in.has("fragment_strided") && in.get_int("fragment_strided") == 1;
  DPLAB_CHECK(saved_strided == (opt_.fragment_pattern == "strided"),
              "{}: streaming_diloco state holds {} fragments{}, but this run has "
              "streaming_diloco.fragment_pattern = {}",
              in.origin().empty() ? std::string("state") : in.origin(),
              saved_strided ? "strided" : "contiguous",
              in.has("fragment_strided") ? "" : " (saved before fragment_pattern existed)",
              opt_.fragment_pattern);
  const int64_t inner = at.steps;
  const std::vector<int64_t> outer = in.get_ints("outer_steps");
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  DPLAB_CHECK(outer.size() == frags_.size(),
              "{}: streaming_diloco state 'outer_steps' has {} entries, expected {} fragments",
              where, outer.size(), frags_.size());
  restore_tensor(in, name(), "theta_global", theta_);
  DPLAB_CHECK(in.has("outer_momentum") == momentum_.defined(),
              "{}: streaming_diloco state {} an outer momentum buffer but "
              "streaming_diloco.outer_momentum is {}",
              where, momentum_.defined() ? "lacks" : "has", opt_.outer_momentum);
  if (momentum_.defined()) restore_tensor(in, name(), "outer_momentum", momentum_);
  const int64_t pending = state_int(in, name(), "pending_fragment", -1, sc.fragments - 1);
  exchange_ = Pending();
  phase_ = Phase::none;  // a saved exchange in flight is saved decoded (its Δ)
  if (pending >= 0) {
    // In flight since inner step `sent`: due after step sent + τ, which is still to come.
    const int64_t sent = state_int(in, name(), "pending_sent_at", inner - sc.delay + 1, inner);
    DPLAB_CHECK(sc.sends_after(sent) == pending,
                "{}: streaming_diloco state: fragment {} in flight since step {}, but the "
                "schedule sends fragment {} then",
                where, pending, sent, sc.sends_after(sent));
    pending_ = pending;
    restore_tensor(in, name(), "pending_delta", delta(pending));
    pending_sent_at_ = sent;
  } else {
    pending_ = -1;
  }
  outer_steps_ = outer;
}

std::unique_ptr<Strategy> make_streaming_diloco_strategy(std::shared_ptr<Topology> topo,
                                                         const Options& opt) {
  return std::make_unique<StreamingDiLoCoStrategy>(std::move(topo), opt);
}

ReshardPolicy streaming_diloco_reshard_policy(const CheckpointConfig&) {
  return averaging_policy(
      "the inner replicas' average; theta, the outer momentum, the fragment schedule and the "
      "averaged fragment in flight (global) rank 0's; the inner optimizer's state averaged");
}

}  // namespace dplab
