#include "dplab/comm/algorithms/streaming_diloco.h"

#include <algorithm>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

void StreamingSchedule::check() const {
  DPLAB_CHECK(H >= 1, "option streaming_diloco.H: expected >= 1 inner steps, got {}", H);
  DPLAB_CHECK(fragments >= 1 && fragments <= H,
              "option streaming_diloco.fragments: expected 1 .. H = {} fragments, got {}", H,
              fragments);
  DPLAB_CHECK(delay >= 0 && delay < H / fragments,
              "option streaming_diloco.fragment_sync_delay: expected 0 <= delay < H / fragments "
              "= {} (an exchange must complete before the next fragment sends), got {}",
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
  DPLAB_CHECK(fragments >= 1 && fragments <= int64_t(segs.size()),
              "option streaming_diloco.fragments: {} fragments, but the model has {} parameter "
              "tensors (fragments are cut at tensor boundaries)",
              fragments, segs.size());
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

StreamingDiLoCoOptions StreamingDiLoCoOptions::from_options(const Options& opt) {
  StreamingDiLoCoOptions o;
  o.schedule.H = opt.get_int("streaming_diloco.H", 50);
  o.schedule.fragments = opt.get_int("streaming_diloco.fragments", 2);
  o.schedule.delay = opt.get_int("streaming_diloco.fragment_sync_delay", 1);
  o.schedule.check();
  o.alpha = opt.get_double("streaming_diloco.fragment_update_alpha", 0.5);
  DPLAB_CHECK(o.alpha >= 0 && o.alpha <= 1,
              "option streaming_diloco.fragment_update_alpha: expected a value in [0, 1], got {}",
              o.alpha);
  const std::string wire = opt.get_string("streaming_diloco.wire", "f32");
  DPLAB_CHECK(wire == "f32" || wire == "bf16" || wire == "f16",
              "option streaming_diloco.wire: expected f32, bf16 or f16, got '{}'", wire);
  o.wire = parse_dtype(wire);
  const std::string quantize = opt.get_string("streaming_diloco.quantize", "none");
  DPLAB_CHECK(quantize == "none" || quantize == "int8" || quantize == "int4",
              "option streaming_diloco.quantize: expected none, int8 or int4, got '{}'", quantize);
  o.quantize_bits = quantize == "int8" ? 8 : quantize == "int4" ? 4 : 0;
  DPLAB_CHECK(o.quantize_bits == 0 || o.wire == DType::f32,
              "option streaming_diloco.quantize = {} replaces the allreduce whose wire type "
              "streaming_diloco.wire = {} sets: leave wire at f32 or set quantize = none",
              quantize, wire);
  o.quantize_block = opt.get_int("streaming_diloco.quantize_block", 256);
  DPLAB_CHECK(o.quantize_block >= 1,
              "option streaming_diloco.quantize_block: expected >= 1 elements, got {}",
              o.quantize_block);
  o.outer_lr = opt.get_double("streaming_diloco.outer_lr", 0.7);
  o.outer_momentum = opt.get_double("streaming_diloco.outer_momentum", 0.9);
  o.outer_nesterov = opt.get_bool("streaming_diloco.outer_nesterov", true);
  o.round_spans_epochs = opt.get_bool("streaming_diloco.round_spans_epochs", true);
  DPLAB_CHECK(o.outer_lr >= 0, "option streaming_diloco.outer_lr: expected >= 0, got {}",
              o.outer_lr);
  DPLAB_CHECK(o.outer_momentum >= 0 && o.outer_momentum < 1,
              "option streaming_diloco.outer_momentum: expected a value in [0, 1), got {}",
              o.outer_momentum);
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
          .rounds_key = "rounds"};
}
}  // namespace

StreamingDiLoCoStrategy::StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : StreamingDiLoCoStrategy(std::move(topo), StreamingDiLoCoOptions::from_options(opt)) {}

StreamingDiLoCoStrategy::StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo,
                                                 const StreamingDiLoCoOptions& o)
    : PeriodicSyncStrategy(std::move(topo), streaming_rounds(o)), opt_(o) {}

void StreamingDiLoCoStrategy::setup(TrainContext& ctx) {
  PeriodicSyncStrategy::setup(ctx);  // θ_g(0): rank 0's model on every rank
  frags_ = arena_fragments(*ctx.arena, opt_.schedule.fragments);
  if (opt_.quantize_bits > 0) {
    DPLAB_CHECK(ctx.arena->device().is_cpu(),
                "option streaming_diloco.quantize = int{}: outer gradients are quantised on the "
                "host, but the parameters are on {}; use quantize = none (wire = bf16 sends 16 "
                "bits on a device)",
                opt_.quantize_bits, ctx.arena->device().str());
    quantizer_.emplace(opt_.quantize_bits, opt_.quantize_block, "streaming_diloco.quantize");
  }
  theta_ = ctx.arena->params().clone();
  delta_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  if (opt_.outer_momentum > 0)
    momentum_ = Tensor::zeros(theta_.shape(), DType::f32, theta_.device());
  outer_steps_.assign(frags_.size(), 0);
}

Tensor StreamingDiLoCoStrategy::range(const Tensor& t, int64_t p) const {
  return t.flat_range(frags_[size_t(p)].first, frags_[size_t(p)].second);
}

void StreamingDiLoCoStrategy::send(int64_t p) {
  NoGradGuard no_grad;
  // δ_p = θ_g[p] − θ_i[p](s), averaged over the replicas while training goes on.
  Tensor d = range(delta_, p);
  d.copy_(range(theta_, p));
  add_(d, range(ctx_.arena->params(), p), -1.f);
  pending_ = p;
  pending_sent_at_ = steps_in_round();
  Communicator& comm = world();
  if (comm.size() == 1) return;
  if (quantizer_) {
    // Codes and scales of this rank's δ_p, gathered from every rank; decoded at the wait.
    const int64_t bytes = quantizer_->packed_bytes(d.numel());
    q_send_ = Tensor::empty({bytes}, DType::u8);
    q_recv_ = Tensor::empty({bytes * comm.size()}, DType::u8);
    quantizer_->encode(d.data<float>(), d.numel(), q_send_.data<uint8_t>());
    exchange_ = meter().iallgather(comm, "outer gradient fragment", q_send_, q_recv_);
    decode_pending_ = true;
  } else {
    exchange_ =
        meter().iallreduce(comm, "outer gradient fragment", d, ReduceOp::average, opt_.wire);
  }
}

void StreamingDiLoCoStrategy::decode_exchange() const {
  if (!decode_pending_) return;
  Tensor d = range(delta_, pending_);
  const int64_t n = d.numel(), bytes = quantizer_->packed_bytes(n);
  const int W = world().size();
  float* out = d.data<float>();
  std::fill(out, out + n, 0.f);
  const uint8_t* all = q_recv_.data<uint8_t>();
  for (int r = 0; r < W; ++r) quantizer_->decode_add(all + int64_t(r) * bytes, n, out);
  for (int64_t j = 0; j < n; ++j) out[j] /= float(W);
  decode_pending_ = false;
}

void StreamingDiLoCoStrategy::wait_exchange() const {
  // The host decodes a quantised exchange: it reads the result.
  meter().complete(exchange_, quantizer_ ? Use::host : Use::compute);
  decode_exchange();
}

void StreamingDiLoCoStrategy::apply(int64_t p, double alpha) {
  NoGradGuard no_grad;
  DPLAB_CHECK(pending_ == p, "streaming_diloco: fragment {} is due, but fragment {} is in flight",
              p, pending_);
  wait_exchange();
  // θ_g[p] ← OuterOpt(θ_g[p], Δ_p): DiLoCo's outer SGD on the fragment's range.
  Tensor theta = range(theta_, p);
  Tensor delta = range(delta_, p);
  Tensor buf = momentum_.defined() ? range(momentum_, p) : Tensor();
  SgdStepArgs a;
  a.lr = static_cast<float>(opt_.outer_lr);
  a.momentum = static_cast<float>(opt_.outer_momentum);
  a.nesterov = opt_.outer_nesterov && opt_.outer_momentum > 0;
  a.first_step = outer_steps_[size_t(p)] == 0;
  backend_for(theta.device()).optim.sgd_step(theta, delta, buf, a);
  ++outer_steps_[size_t(p)];
  // θ_i[p] ← θ_g[p] + α (θ_i[p] − θ_g[p]), reusing δ's range as scratch.
  Tensor local = range(ctx_.arena->params(), p);
  if (alpha == 0) {
    local.copy_(theta);
  } else {
    delta.copy_(local);
    add_(delta, theta, -1.f);
    local.copy_(theta);
    add_(local, delta, static_cast<float>(alpha));
  }
  pending_ = -1;
}

void StreamingDiLoCoStrategy::inner_step(const StepInfo&, bool) {
  // Helps a non-blocking MPI allreduce progress while the inner steps go on.
  for (Request& r : exchange_.requests()) r.test();
  const int64_t s = steps_in_round();
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
  wait_exchange();  // nothing in flight; applied at its step as scheduled
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
  out.put_ints("outer_steps", outer_steps_);
  out.put_tensor("theta_global", theta_);
  if (momentum_.defined()) out.put_tensor("outer_momentum", momentum_);
  out.put_int("pending_fragment", pending_);
  if (pending_ >= 0) {
    wait_exchange();  // the averaged Δ, applied after the resume at its step
    out.put_int("pending_sent_at", pending_sent_at_);
    out.put_tensor("pending_delta", range(delta_, pending_));
  }
}

void StreamingDiLoCoStrategy::load_sync_state(const StateDict& in, const RoundPosition& at) {
  const auto& sc = opt_.schedule;
  state_int(in, name(), "H", sc.H, sc.H);
  state_int(in, name(), "fragments", sc.fragments, sc.fragments);
  state_int(in, name(), "fragment_sync_delay", sc.delay, sc.delay);
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
  decode_pending_ = false;  // a saved exchange in flight is saved decoded (its Δ)
  if (pending >= 0) {
    // In flight since inner step `sent`: due after step sent + τ, which is still to come.
    const int64_t sent = state_int(in, name(), "pending_sent_at", inner - sc.delay + 1, inner);
    DPLAB_CHECK(sc.sends_after(sent) == pending,
                "{}: streaming_diloco state: fragment {} in flight since step {}, but the "
                "schedule sends fragment {} then",
                where, pending, sent, sc.sends_after(sent));
    pending_ = pending;
    restore_tensor(in, name(), "pending_delta", range(delta_, pending));
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

}  // namespace dplab
